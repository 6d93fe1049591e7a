/**
 * What is computed for each key of a step (Flink's AggregateFunction): the accumulator
 * starts from `init()`, absorbs each value with `add`, and `result` turns it into the
 * value published. Functions must be pure — a replayed step must produce the same bytes —
 * so `add` returns the new accumulator instead of mutating a shared one.
 */
export interface Aggregator<T, A, R> {
  init(): A;
  add(accumulator: A, value: T): A;
  result(accumulator: A): R;
}

const NO_VALUE: unique symbol = Symbol('no value yet');

/** `reduce(fn)`: the first value of a key is its accumulator (Flink's ReduceFunction). */
export function reduceFirst<T>(fn: (accumulator: T, value: T) => T): Aggregator<T, T, T> {
  return {
    init: () => NO_VALUE as unknown as T,
    add: (accumulator, value) =>
      accumulator === (NO_VALUE as unknown as T) ? value : fn(accumulator, value),
    result: (accumulator) => accumulator,
  };
}

/** `reduce(fn, init)`: a fold from an initial value, which is shared and must not be mutated. */
export function fold<T, A>(fn: (accumulator: A, value: T) => A, init: A): Aggregator<T, A, A> {
  return { init: () => init, add: fn, result: (accumulator) => accumulator };
}

/** Compaction keeps the latest value of each entity, or folds updates with `merge`. */
export function latest<T>(merge?: (previous: T, update: T) => T): Aggregator<T, T, T> {
  return merge === undefined
    ? { init: () => undefined as T, add: (_previous, update) => update, result: (value) => value }
    : reduceFirst(merge);
}
