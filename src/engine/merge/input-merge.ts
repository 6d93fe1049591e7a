import { compareMergeKeys } from './merge-key.js';
import { ReleasedKeys, type LowestItem } from './released-keys.js';
import type {
  InputFloor,
  InputRecord,
  MergeKey,
  MergeRecord,
} from '../../result-format/merge-record.js';

/** An item of one input, placed in the merged sequence. */
export interface MergedItem<T> extends MergeKey {
  readonly eventTime: number;
  readonly value: T;
}

/** A released item with its merged position. */
export interface ReleasedItem<T> extends MergedItem<T> {
  readonly position: bigint;
}

/**
 * An item from its offer to its release, which hands this same object over with its position
 * set (an object less per message).
 */
interface HeldItem<T> extends MergedItem<T> {
  /** The latest event time of its input before it: what a record starting at it restores. */
  readonly maxBefore: number;
  /** Its merged position, set when it is released. */
  position: bigint;
}

/** What the merge knows of one input. */
interface InputState {
  /** The latest event time offered; -Infinity before the first. */
  maxEventTime: number;
  /** The offset after the last one offered (or the record's `from`). */
  nextOffset: bigint;
  /** Left out of the bound as idle, until it offers again. */
  leftOut: boolean;
  /** Floors in force, by offset; the last is the current one. */
  floors: InputFloor[];
  /** Items offered and not released yet. */
  held: number;
}

/**
 * The merge of several inputs into one sequence that any order of reading them reproduces
 * (docs/internals/many-inputs.md): each item's merge time is its event time raised to its
 * input's watermark (the latest event time seen on it, less `maxOutOfOrderness`) and floor;
 * items are released in merge-key order while their merge time is below the bound, the least
 * watermark among the inputs not left out as idle. A record taken at a position rebuilds the
 * sequence from there when given to a new merge.
 */
export class InputMerge<T> {
  private readonly inputs: InputState[];
  /** Items offered and not released, as a binary min-heap by merge key. */
  private readonly held: HeldItem<T>[] = [];
  /** The keys of the released items a record may still need, from position `historyStart`. */
  private readonly history = new ReleasedKeys();
  private historyStart: bigint;
  /** The key of the item at `historyStart - 1` (absent at position 0). */
  private historyAfter: MergeKey | undefined;
  /** Items with a key at or below this were released before the record this merge began at. */
  private readonly skipThrough: MergeKey | undefined;
  private nextPosition: bigint;

  constructor(
    inputs: number,
    private readonly maxOutOfOrderness: number,
    record?: MergeRecord,
  ) {
    if (!Number.isInteger(inputs) || inputs < 1) {
      throw new RangeError(`a merge needs at least one input, given: ${inputs}`);
    }
    if (record !== undefined && record.inputs.length !== inputs) {
      throw new RangeError(
        `the record holds ${record.inputs.length} inputs, the merge has ${inputs}`,
      );
    }
    this.inputs = Array.from({ length: inputs }, (_, i) => {
      const input = record?.inputs[i];
      return {
        maxEventTime: input?.maxEventTime ?? Number.NEGATIVE_INFINITY,
        nextOffset: input?.from ?? 0n,
        leftOut: false,
        floors: [...(input?.floors ?? [])],
        held: 0,
      };
    });
    this.nextPosition = record?.position ?? 0n;
    this.historyStart = this.nextPosition;
    this.historyAfter = record?.after;
    this.skipThrough = record?.after;
  }

  /** The merged position the next released item gets. */
  get position(): bigint {
    return this.nextPosition;
  }

  /** Where input `input` is read from: its record's `from`, or 0. */
  startOffset(input: number): bigint {
    return this.stateOf(input).nextOffset;
  }

  /** Items of input `input` offered and not released yet. */
  heldBy(input: number): number {
    return this.stateOf(input).held;
  }

  /**
   * Whether input `input`'s watermark is above the bound: it does not hold the merge back, so
   * its items wait for the inputs that do (reading it further only holds more of them).
   */
  isAhead(input: number): boolean {
    return this.watermarkOf(this.stateOf(input)) > this.bound;
  }

  /** Items offered and not released yet, over all inputs. */
  get heldItems(): number {
    return this.held.length;
  }

  /**
   * The event time below which every item is released: the least watermark among the inputs
   * not left out (-Infinity while one of them has offered nothing). When every input is left
   * out, the merge is as one input: the highest watermark among them (or the bound reached, if
   * higher), whichever order they were left out in.
   */
  get bound(): number {
    let least = Number.POSITIVE_INFINITY;
    let highest = this.lastBound;
    for (const input of this.inputs) {
      const watermark = this.watermarkOf(input);
      if (!input.leftOut) least = Math.min(least, watermark);
      highest = Math.max(highest, watermark);
    }
    return least === Number.POSITIVE_INFINITY ? highest : least;
  }

  /** The highest bound items were released below: an input back from idle is raised to it. */
  private lastBound = Number.NEGATIVE_INFINITY;

  /**
   * Takes in the next message of `input` (offsets strictly increasing per input). `eventTime`
   * places it; `latestEventTime` (a message of several values: the greatest of their times,
   * `eventTime` the least) moves its input's watermark. Returns false when the item was
   * released before the record this merge began at (a re-read from the record's `from` meets
   * those), true when it is held for release.
   */
  offer(
    input: number,
    offset: bigint,
    eventTime: number,
    value: T,
    latestEventTime = eventTime,
  ): boolean {
    const state = this.stateOf(input);
    if (offset < state.nextOffset) {
      throw new RangeError(
        `input ${input}: offset ${offset} offered after ${state.nextOffset - 1n}; offsets must increase`,
      );
    }
    if (state.leftOut) {
      // Back after being left out: nothing it brings may pass what was released meanwhile.
      state.leftOut = false;
      const floor = this.lastBound;
      if (floor > this.watermarkOf(state)) state.floors.push({ offset, floor });
    }
    const watermark = Math.max(
      state.maxEventTime - this.maxOutOfOrderness,
      this.floorAt(state, offset),
    );
    const item: HeldItem<T> = {
      mergeTime: Math.max(eventTime, watermark),
      input,
      offset,
      eventTime,
      value,
      maxBefore: state.maxEventTime,
      position: -1n,
    };
    state.maxEventTime = Math.max(state.maxEventTime, latestEventTime);
    state.nextOffset = offset + 1n;
    if (this.skipThrough !== undefined && compareMergeKeys(item, this.skipThrough) <= 0) {
      return false;
    }
    this.push(item);
    return true;
  }

  /**
   * Leaves `input` out of the bound (its caller saw it idle) until it offers again; then its
   * items are raised to the bound reached by then (a floor, kept in every record after).
   */
  leaveOut(input: number): void {
    const state = this.stateOf(input);
    if (state.leftOut) return;
    this.lastBound = Math.max(this.lastBound, this.bound);
    state.leftOut = true;
  }

  /** Releases, in merged order, every held item below the bound. */
  release(): ReleasedItem<T>[] {
    const bound = this.bound;
    this.lastBound = Math.max(this.lastBound, bound);
    const released: ReleasedItem<T>[] = [];
    while (this.held.length > 0 && (this.held[0] as HeldItem<T>).mergeTime < bound) {
      const item = this.pop();
      this.history.push(item, item.maxBefore);
      item.position = this.nextPosition++;
      released.push(item);
    }
    return released;
  }

  /**
   * What a restart needs to produce the sequence again from `position` on (between the oldest
   * position still remembered, see `forgetBefore`, and the next position to release).
   */
  recordAt(position: bigint): MergeRecord {
    if (position < this.historyStart || position > this.nextPosition) {
      throw new RangeError(
        `a record at position ${position}: only ${this.historyStart}..${this.nextPosition} can be recorded`,
      );
    }
    const index = Number(position - this.historyStart);
    const after = index === 0 ? this.historyAfter : this.history.keyAt(index - 1);
    // Each input's item of the lowest offset at or after `position`: one pass over both.
    const first: (LowestItem | undefined)[] = this.inputs.map(() => undefined);
    this.history.lowestFrom(index, first);
    for (const item of this.held) {
      const lowest = first[item.input];
      if (lowest === undefined || item.offset < lowest.offset) first[item.input] = item;
    }
    const inputs = this.inputs.map((state, input): InputRecord => {
      const lowest = first[input];
      const from = lowest?.offset ?? state.nextOffset;
      const floors = state.floors.filter(
        (floor, i) => floor.offset >= from || (state.floors[i + 1]?.offset ?? from + 1n) > from,
      );
      // An input left out below the bound reached: what it offers next must pass nothing
      // released, whenever it comes back. Deciding that floor now, for a restart from this
      // record, keeps its items read again from `from` up to here where they were (the
      // restart reads it up to here again before its bound can pass them).
      if (this.watermarkOf(state) < this.lastBound) {
        const { nextOffset } = state;
        if (floors.at(-1)?.offset === nextOffset) floors.pop();
        floors.push({ offset: nextOffset, floor: this.lastBound });
      }
      return { from, maxEventTime: lowest?.maxBefore ?? state.maxEventTime, floors };
    });
    return {
      position,
      ...(after === undefined ? {} : { after: keyOf(after) }),
      inputs,
    };
  }

  /** No record will be asked before `position`: the items released before it are let go. */
  forgetBefore(position: bigint): void {
    const drop = Number(position - this.historyStart);
    if (drop <= 0) return;
    const kept = Math.min(drop, this.history.length);
    if (kept > 0) this.historyAfter = this.history.keyAt(kept - 1);
    this.history.forget(kept);
    this.historyStart += BigInt(kept);
  }

  private stateOf(input: number): InputState {
    const state = this.inputs[input];
    if (state === undefined) {
      throw new RangeError(`input ${input} is not one of the merge's ${this.inputs.length}`);
    }
    return state;
  }

  /**
   * What every item the input has still to offer gets at least: a floor counts only from its
   * offset on (a restart re-reads the offsets before a floor without it).
   */
  private watermarkOf(state: InputState): number {
    return Math.max(
      state.maxEventTime - this.maxOutOfOrderness,
      this.floorAt(state, state.nextOffset),
    );
  }

  /** The floor in force at `offset` of an input (floors are in offset order). */
  private floorAt(state: InputState, offset: bigint): number {
    let floor = Number.NEGATIVE_INFINITY;
    for (const f of state.floors) if (f.offset <= offset) floor = f.floor;
    return floor;
  }

  private push(item: HeldItem<T>): void {
    (this.inputs[item.input] as InputState).held++;
    const { held } = this;
    let index = held.push(item) - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (compareMergeKeys(held[parent] as HeldItem<T>, item) <= 0) break;
      held[index] = held[parent] as HeldItem<T>;
      index = parent;
    }
    held[index] = item;
  }

  private pop(): HeldItem<T> {
    const { held } = this;
    const top = held[0] as HeldItem<T>;
    (this.inputs[top.input] as InputState).held--;
    const last = held.pop() as HeldItem<T>;
    if (held.length === 0) return top;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= held.length) break;
      const right = left + 1;
      const child =
        right < held.length &&
        compareMergeKeys(held[right] as HeldItem<T>, held[left] as HeldItem<T>) < 0
          ? right
          : left;
      if (compareMergeKeys(last, held[child] as HeldItem<T>) <= 0) break;
      held[index] = held[child] as HeldItem<T>;
      index = child;
    }
    held[index] = last;
    return top;
  }
}

const keyOf = ({ mergeTime, input, offset }: MergeKey): MergeKey => ({ mergeTime, input, offset });
