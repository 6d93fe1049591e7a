import { compareMergeKeys, type MergeKey } from './merge-key.js';
import type { InputFloor, InputRecord, MergeRecord } from './merge-record.js';

/** An item of one input, placed in the merged sequence. */
export interface MergedItem<T> extends MergeKey {
  readonly eventTime: number;
  readonly value: T;
}

/** A released item with its merged position. */
export interface ReleasedItem<T> extends MergedItem<T> {
  readonly position: bigint;
}

interface HeldItem<T> extends MergedItem<T> {
  /** The latest event time of its input before it: what a record starting at it restores. */
  readonly maxBefore: number;
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
  /** Released items still needed for a record, from position `historyStart`. */
  private history: HeldItem<T>[] = [];
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
    let count = 0;
    for (const item of this.held) if (item.input === input) count++;
    return count;
  }

  /** Items offered and not released yet, over all inputs. */
  get heldItems(): number {
    return this.held.length;
  }

  /**
   * The event time below which every item is released: the least watermark among the inputs
   * not left out (-Infinity while one of them has offered nothing; kept when all are left out).
   */
  get bound(): number {
    let least = Number.POSITIVE_INFINITY;
    for (const input of this.inputs) {
      if (!input.leftOut) least = Math.min(least, this.watermarkOf(input));
    }
    return least === Number.POSITIVE_INFINITY ? this.lastBound : least;
  }

  /** The bound when an input was last left out, for when every input is. */
  private lastBound = Number.NEGATIVE_INFINITY;

  /**
   * Takes in the next message of `input` (offsets strictly increasing per input). Returns
   * false when the item was released before the record this merge began at (a re-read from
   * the record's `from` meets those), true when it is held for release.
   */
  offer(input: number, offset: bigint, eventTime: number, value: T): boolean {
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
    };
    state.maxEventTime = Math.max(state.maxEventTime, eventTime);
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
      this.history.push(item);
      released.push({ ...item, position: this.nextPosition++ });
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
    const after = index === 0 ? this.historyAfter : this.history[index - 1];
    const since = this.history.slice(index);
    const inputs = this.inputs.map((state, input): InputRecord => {
      let first: HeldItem<T> | undefined;
      for (const item of [...since, ...this.held]) {
        if (item.input === input && (first === undefined || item.offset < first.offset)) {
          first = item;
        }
      }
      const from = first?.offset ?? state.nextOffset;
      const floors = state.floors.filter(
        (floor, i) => floor.offset >= from || (state.floors[i + 1]?.offset ?? from + 1n) > from,
      );
      return { from, maxEventTime: first?.maxBefore ?? state.maxEventTime, floors };
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
    this.historyAfter = this.history[kept - 1] ?? this.historyAfter;
    this.history = this.history.slice(kept);
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
