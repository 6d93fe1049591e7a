import type { Aggregator } from '../common/aggregator.js';
import type { Key, KeyedOutput } from '../common/keyed-output.js';

/** One key's state within the open step. Mutated in place: see WindowBuffer. */
interface Slot<A> {
  key: Key;
  accumulator: A;
  count: number;
}

/**
 * Where state lives: the per-key accumulators of the open step, in the order keys first
 * appeared (the documented section order of a result, and deterministic on replay).
 *
 * Slots are mutable and recycled across steps so that adding a value to a known key
 * allocates nothing (one Map lookup, one call to `add`), and a key seen again in the
 * next step reuses a pooled slot instead of a fresh object.
 */
export class WindowBuffer<T, A, R> {
  private readonly slots = new Map<Key, Slot<A>>();
  private readonly order: Slot<A>[] = [];
  private readonly pool: Slot<A>[] = [];

  constructor(private readonly aggregator: Aggregator<T, A, R>) {}

  get size(): number {
    return this.order.length;
  }

  /** Folds `value` into `key`'s accumulator. If `add` throws, the accumulator is unchanged. */
  add(key: Key, value: T): void {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      const accumulator = this.aggregator.add(this.aggregator.init(), value);
      slot = this.pool.pop() ?? { key: null, accumulator, count: 0 };
      slot.key = key;
      slot.accumulator = accumulator;
      slot.count = 1;
      this.slots.set(key, slot);
      this.order.push(slot);
      return;
    }
    slot.accumulator = this.aggregator.add(slot.accumulator, value);
    slot.count++;
  }

  /**
   * The outputs of the step, in first-appearance order of their keys; then empties the
   * buffer. A key whose `result` throws has no output: `failed` is told instead (and may
   * throw itself, which leaves the buffer unusable). With `continues`, every output is marked
   * as continuing a window a flush left open.
   */
  drain(
    failed: (key: Key, count: number, cause: unknown) => void,
    continues = false,
  ): KeyedOutput<R>[] {
    const outputs: KeyedOutput<R>[] = [];
    for (const slot of this.order) {
      try {
        const { key, count } = slot;
        const value = this.aggregator.result(slot.accumulator);
        // Marked as it is built: a window a flush left open continues what came before.
        outputs.push(continues ? { key, count, value, continues } : { key, count, value });
      } catch (cause) {
        failed(slot.key, slot.count, cause);
      }
      // Let an object accumulator be collected while its slot is pooled. A number is left in
      // place: storing undefined would generalise the field's representation in V8, and every
      // later double stored there would then allocate a heap number.
      if (typeof slot.accumulator === 'object' || typeof slot.accumulator === 'function') {
        slot.accumulator = undefined as A;
      }
      this.pool.push(slot);
    }
    this.order.length = 0;
    this.slots.clear();
    return outputs;
  }
}
