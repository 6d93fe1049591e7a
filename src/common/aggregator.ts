import { ConfigError, describe } from './errors.js';

/**
 * What is computed for each key of a step (Flink's AggregateFunction): the accumulator
 * starts from `init()` (called once per key per step, so each gets a value of its own), absorbs each value with `add`, and `result` turns it into the
 * value published. Functions must be pure — a replayed step must produce the same bytes —
 * so `add` returns the new accumulator instead of mutating a shared one.
 */
export interface Aggregator<T, A, R> {
  /** A new accumulator for a key of a step: called once per key per step. */
  init(): A;
  /** The accumulator with `value` absorbed; returns it instead of changing a shared one. */
  add(accumulator: A, value: T): A;
  /** The value published for a key, from its accumulator. */
  result(accumulator: A): R;
  /**
   * Combines two accumulators, the earlier-created window's first: needed by merging windows
   * (per-key sessions, `session(gap, { grace })`), when a message bridges two sessions of a
   * key. Pure, like the others. `reduce(fn)` has one (fn itself).
   */
  merge?(first: A, second: A): A;
}

const NO_VALUE: unique symbol = Symbol('no value yet');

/** `reduce(fn)`: the first value of a key is its accumulator (Flink's ReduceFunction). */
export function reduceFirst<T>(fn: (accumulator: T, value: T) => T): Aggregator<T, T, T> {
  return {
    init: () => NO_VALUE as unknown as T,
    add: (accumulator, value) =>
      accumulator === (NO_VALUE as unknown as T) ? value : fn(accumulator, value),
    result: (accumulator) => accumulator,
    // As Kafka Streams merges sessions of a reduce: the reducer combines the two aggregates.
    merge: (first, second) => {
      if (first === (NO_VALUE as unknown as T)) return second;
      if (second === (NO_VALUE as unknown as T)) return first;
      return fn(first, second);
    },
  };
}

/**
 * `reduce(fn, init)`: a fold from an initial value that every key of every step gets for its
 * own, so a reducer that mutates its accumulator (`a.push(v); return a`) cannot leak one
 * key's or one step's values into another, and a replay starts from the same value as the
 * uninterrupted run. `init` is a factory `() => A`, called once per key per step, or a plain
 * value: a primitive as is, an object structured-cloned per key per step.
 */
export function fold<T, A>(
  fn: (accumulator: A, value: T) => A,
  init: A | (() => A),
): Aggregator<T, A, A> {
  return { init: initialValue(init), add: fn, result: (accumulator) => accumulator };
}

/**
 * The factory behind `fold`'s `init`. An object must survive `structuredClone` unchanged in
 * kind, checked now, where the job is built: a function or symbol inside cannot be cloned,
 * and a class instance would come back as a plain object without its methods.
 */
function initialValue<A>(init: A | (() => A)): () => A {
  if (typeof init === 'function') return init as () => A;
  if (typeof init !== 'object' || init === null) return () => init;
  let clone: A;
  try {
    clone = structuredClone(init);
  } catch (cause) {
    throw new ConfigError(
      'reduce init',
      `must be structured-cloneable, or a factory () => init (${describe(cause)})`,
      init,
    );
  }
  if (Object.getPrototypeOf(clone) !== Object.getPrototypeOf(init)) {
    throw new ConfigError(
      'reduce init',
      'must be a plain object, array or built-in value that structuredClone copies as it is, ' +
        'or a factory () => init (a class instance loses its class)',
      init,
    );
  }
  return () => structuredClone(init);
}

/** Compaction keeps the latest value of each entity, or folds updates with `merge`. */
export function latest<T>(merge?: (previous: T, update: T) => T): Aggregator<T, T, T> {
  return merge === undefined
    ? { init: () => undefined as T, add: (_previous, update) => update, result: (value) => value }
    : reduceFirst(merge);
}
