import type { Key } from '../common/keyed-output.js';
import { WindowEndQueue } from './window-end-queue.js';

/**
 * An event-time window: its slot in KeyedWindows, whose methods read and change it. Valid from
 * `create` until the `recycle` after its removal, so that a closed window's output can still
 * be read in the result that closes it.
 */
export type WindowId = number;

/** No window: a key without one, the end of a list. */
export const NO_WINDOW: WindowId = -1;

// A window's numbers: one row of 6 doubles (48 bytes, unboxed) in `numbers`.
const ROW = 6;
const START = 0;
const END = 1;
/** The watermark in force before the window's first element (what a restart from it restores). */
const WATERMARK_BEFORE = 2;
/** Creation order: ties between windows closing together are broken by it. */
const SEQ = 3;
const COUNT = 4;
/** Offset of the first element, a bigint through `offsets` (a restart must re-read from here). */
const FIRST_OFFSET = 5;

// A window's links: one row of 5 int32 in `links`.
const LINKS = 5;
/** The key's next window in creation order; a free slot's next free one. */
const NEXT_OF_KEY = 0;
const PREV_CREATED = 1;
const NEXT_CREATED = 2;
/**
 * Count windows over multi-value messages: values of the key at the first offset that belong
 * to earlier windows (a restart skips as many there).
 */
const SKIP = 3;
/** Its key's slot in the key index. */
const KEY_SLOT = 4;

/**
 * A key seen lately: an index into `firstOfSlot`, which names its first window (NO_WINDOW
 * while it has none: the slot is idle). The key index maps a key to its slot, which stays
 * the same while the key has windows, so that a window's removal finds its key's list
 * without hashing the key, and stays across a key's gaps between windows (a key whose
 * windows all closed usually comes back: hopping keys at every burst), so that the key is
 * hashed once per message and not twice more per gap.
 */
type KeySlot = number;
const NO_SLOT: KeySlot = -1;

/**
 * Slots idle since before the last sweep are dropped from the key index at the next one, a
 * sweep coming after as many slots went idle as the most keys with windows at once since the
 * last (this many at least): the index holds the keys with windows and those that went idle
 * in the last two such periods, at most twice the most keys with windows (a burst's keys,
 * which go idle together when it closes and come back with the next, are never dropped).
 */
const MIN_SWEEP_PERIOD = 1024;

// A window's flags: one byte in `flags`.
const OPEN = 1;
/** Early updates ('each-result'): elements came since the window's last early output. */
const CHANGED = 2;
/** A flush published and emptied this window: its next outputs continue that one. */
const CONTINUES = 4;
/** Filed by its end (a removed window stays filed until it comes up). */
const FILED = 8;
/** The first of its key's windows: the one the key index names. */
const FIRST = 16;

/** No key looked up yet (a key may be null). */
const NO_KEY = Symbol('no key');

/**
 * Where the state of event-time windows lives: every open window's numbers in typed arrays
 * (no object, no boxed double per window), indexed three ways, each for one question the
 * operator asks on its hot path:
 * - by key (a list through the windows, usually one to three): where does an element go;
 * - by end (./window-end-queue.ts): which windows has the watermark closed;
 * - by creation (a doubly linked list): what is the first offset any open window still needs,
 *   the re-read point a result records. Windows are created in offset order and a merged
 *   session keeps the older window, so the oldest open window holds the least first offset.
 * A removed window's slot is reused after `recycle`; a merged-away one stays filed by its end
 * until it comes up.
 */
export class KeyedWindows<A> {
  private numbers = new Float64Array(0);
  private offsets = new BigInt64Array(0);
  private links = new Int32Array(0);
  private flags = new Uint8Array(0);
  private readonly keys: Key[] = [];
  /** Unboxed while every accumulator is a number (a double array). */
  private readonly accumulators: A[] = [];
  private capacity = 0;
  /** Slots handed out at least once; those above were never used. */
  private used = 0;
  private freeHead = NO_WINDOW;
  private freeCount = 0;
  /** Removed windows whose slots `recycle` frees. */
  private readonly removed: WindowId[] = [];
  /** The key index: a slot per key with open windows or idle lately (see MIN_SWEEP_PERIOD). */
  private readonly slotOfKey = new Map<Key, KeySlot>();
  /** Per key slot, the key's first window (NO_WINDOW: idle); a free slot's next free one. */
  private firstOfSlot = new Int32Array(0);
  /** Per idle key slot, the sweep period it went idle in. */
  private idleSince = new Int32Array(0);
  private slotsUsed = 0;
  private freeSlot = NO_SLOT;
  /** Sweeps of the key index so far, the period slots go idle in. */
  private sweeps = 0;
  /** Slots gone idle since the last sweep, and how many make the next one due. */
  private idled = 0;
  private sweepAfter = MIN_SWEEP_PERIOD;
  /** Keys with windows now, and at most since the last sweep. */
  private keysWithWindows = 0;
  private mostKeysWithWindows = 0;
  /**
   * The last key looked up and its slot: a message's windows are all of one key, so `first`
   * and the `create`s after it look the key up once.
   */
  private lookedUp: Key | typeof NO_KEY = NO_KEY;
  private lookedUpSlot = NO_SLOT;
  private readonly byEnd = new WindowEndQueue();
  private oldest = NO_WINDOW;
  private newest = NO_WINDOW;
  private nextSeq = 0;
  private openCount = 0;
  /** Windows marked changed since the last `takeChanged` (some may have closed since). */
  private readonly changed: WindowId[] = [];

  /** Windows open now. */
  get size(): number {
    return this.openCount;
  }

  /** Slots taken: the open windows, and removed ones not recycled or still filed. */
  get slots(): number {
    return this.used - this.freeCount;
  }

  /** The oldest open window of `key`, or NO_WINDOW; `nextOfKey` gives the others in order. */
  first(key: Key): WindowId {
    const slot = this.slotOf(key);
    return slot === NO_SLOT ? NO_WINDOW : (this.firstOfSlot[slot] as WindowId);
  }

  nextOfKey(window: WindowId): WindowId {
    return this.links[window * LINKS + NEXT_OF_KEY] as number;
  }

  /** Opens an empty window (not filed for `closedBy`). */
  create(
    key: Key,
    start: number,
    end: number,
    firstOffset: bigint,
    watermarkBefore: number,
  ): WindowId {
    const window = this.allocate();
    const { numbers, links } = this;
    const row = window * ROW;
    numbers[row + START] = start;
    numbers[row + END] = end;
    numbers[row + WATERMARK_BEFORE] = watermarkBefore;
    numbers[row + SEQ] = this.nextSeq++;
    numbers[row + COUNT] = 0;
    this.offsets[row + FIRST_OFFSET] = firstOffset;
    const link = window * LINKS;
    links[link + NEXT_OF_KEY] = NO_WINDOW;
    links[link + PREV_CREATED] = this.newest;
    links[link + NEXT_CREATED] = NO_WINDOW;
    links[link + SKIP] = 0;
    this.keys[window] = key;
    const slot = this.slotOf(key);
    if (slot === NO_SLOT) {
      this.flags[window] = OPEN | FIRST;
      links[link + KEY_SLOT] = this.newSlot(key, window);
    } else if (this.firstOfSlot[slot] === NO_WINDOW) {
      this.flags[window] = OPEN | FIRST;
      links[link + KEY_SLOT] = slot;
      this.firstOfSlot[slot] = window;
      this.keyGotWindows();
    } else {
      this.flags[window] = OPEN;
      links[link + KEY_SLOT] = slot;
      let last = this.firstOfSlot[slot] as WindowId;
      for (let next = this.nextOfKey(last); next !== NO_WINDOW; next = this.nextOfKey(last)) {
        last = next;
      }
      links[last * LINKS + NEXT_OF_KEY] = window;
    }
    if (this.newest === NO_WINDOW) this.oldest = window;
    else links[this.newest * LINKS + NEXT_CREATED] = window;
    this.newest = window;
    this.openCount++;
    return window;
  }

  /**
   * Files a window (not filed yet) under its end for `closedBy`; count windows, closed by
   * count, never are. A window's end may grow while it is filed: it is re-filed when it comes
   * up, so that the order it is filed in is never changed under it.
   */
  schedule(window: WindowId): void {
    this.flags[window] = (this.flags[window] as number) | FILED;
    this.byEnd.push(window, this.end(window), this.numbers[window * ROW + SEQ] as number);
  }

  /** Removes an open window (closed, or merged into another); its slot is kept until `recycle`. */
  remove(window: WindowId): void {
    const { links } = this;
    const flags = this.flags[window] as number;
    this.flags[window] = flags & ~(OPEN | CHANGED | FIRST);
    this.openCount--;
    const slot = links[window * LINKS + KEY_SLOT] as KeySlot;
    const next = this.nextOfKey(window);
    if ((flags & FIRST) === 0) {
      let before = this.firstOfSlot[slot] as WindowId;
      while (this.nextOfKey(before) !== window) before = this.nextOfKey(before);
      links[before * LINKS + NEXT_OF_KEY] = next;
    } else if (next === NO_WINDOW) {
      this.firstOfSlot[slot] = NO_WINDOW;
      this.idleSince[slot] = this.sweeps;
      this.idled++;
      this.keysWithWindows--;
    } else {
      this.firstOfSlot[slot] = next;
      this.flags[next] = (this.flags[next] as number) | FIRST;
    }
    const link = window * LINKS;
    const prevCreated = links[link + PREV_CREATED] as number;
    const nextCreated = links[link + NEXT_CREATED] as number;
    if (prevCreated === NO_WINDOW) this.oldest = nextCreated;
    else links[prevCreated * LINKS + NEXT_CREATED] = nextCreated;
    if (nextCreated === NO_WINDOW) this.newest = prevCreated;
    else links[nextCreated * LINKS + PREV_CREATED] = prevCreated;
    if ((flags & FILED) === 0) this.removed.push(window);
  }

  /** The removed windows' slots become free: call it once their outputs are built. */
  recycle(): void {
    const { removed, links } = this;
    for (let i = 0; i < removed.length; i++) {
      const window = removed[i] as WindowId;
      // Let what the window held be collected. A number is left in place: storing anything
      // else in a double array would box every later number stored there.
      const accumulator = this.accumulators[window];
      if (typeof accumulator === 'object' || typeof accumulator === 'function') {
        this.accumulators[window] = undefined as A;
      }
      if (typeof this.keys[window] === 'string') this.keys[window] = null;
      links[window * LINKS + NEXT_OF_KEY] = this.freeHead;
      this.freeHead = window;
    }
    this.freeCount += removed.length;
    removed.length = 0;
    if (this.idled >= this.sweepAfter) this.sweepKeys();
  }

  /** Keys in the key index: those with open windows, and those idle lately. */
  get indexedKeys(): number {
    return this.slotOfKey.size;
  }

  /**
   * Removes the windows `isDue(end)` closes and puts them into `into` (empty: sorted in place,
   * no copy) in `closingOrder`. `isDue` must be monotonic in `end` (true for every end below
   * one that is due).
   */
  closedBy(isDue: (end: number) => boolean, into: WindowId[]): void {
    const { byEnd } = this;
    while (byEnd.size > 0 && isDue(byEnd.peekEnd())) {
      const window = byEnd.pop();
      const flags = (this.flags[window] as number) & ~FILED;
      this.flags[window] = flags;
      if ((flags & OPEN) === 0)
        this.removed.push(window); // merged away: dropped lazily
      else if (!isDue(this.end(window)))
        this.schedule(window); // a session that grew
      else into.push(window);
    }
    if (!this.inClosingOrder(into)) into.sort(this.closingOrder);
    for (let i = 0; i < into.length; i++) this.remove(into[i] as WindowId);
  }

  /**
   * Whether `windows` are in `closingOrder` already: the end queue hands aligned windows out
   * by (end, creation), which is their closing order, so a burst's hundreds of thousands of
   * windows need one pass instead of a sort (a stable sort of sorted windows keeps them).
   */
  private inClosingOrder(windows: readonly WindowId[]): boolean {
    for (let i = 1; i < windows.length; i++) {
      if (this.closingOrder(windows[i - 1] as WindowId, windows[i] as WindowId) > 0) return false;
    }
    return true;
  }

  /** The documented order of windows output together: by end, then start, then creation. */
  readonly closingOrder = (a: WindowId, b: WindowId): number => {
    const { numbers } = this;
    const rowA = a * ROW;
    const rowB = b * ROW;
    return (
      (numbers[rowA + END] as number) - (numbers[rowB + END] as number) ||
      (numbers[rowA + START] as number) - (numbers[rowB + START] as number) ||
      (numbers[rowA + SEQ] as number) - (numbers[rowB + SEQ] as number)
    );
  };

  /** The oldest open window (its first offset is where a restart re-reads), or NO_WINDOW. */
  oldestOpen(): WindowId {
    return this.oldest;
  }

  /** Open windows in creation order (for a flush, and a result's per-key recovery state). */
  *openInCreationOrder(): Generator<WindowId> {
    for (let window = this.oldest; window !== NO_WINDOW; window = this.nextCreated(window)) {
      yield window;
    }
  }

  /** Adds one element, whose fold gave `accumulator`. */
  fold(window: WindowId, accumulator: A): void {
    this.accumulators[window] = accumulator;
    const count = window * ROW + COUNT;
    this.numbers[count] = (this.numbers[count] as number) + 1;
  }

  /** Takes `other`'s elements (not its accumulator: merging those is the aggregate's) and removes it. */
  merge(survivor: WindowId, other: WindowId): void {
    const { numbers } = this;
    const row = survivor * ROW;
    const from = other * ROW;
    this.widen(survivor, numbers[from + START] as number, numbers[from + END] as number);
    numbers[row + COUNT] = (numbers[row + COUNT] as number) + (numbers[from + COUNT] as number);
    if (this.continues(other)) this.flags[survivor] = (this.flags[survivor] as number) | CONTINUES;
    this.remove(other);
  }

  /**
   * Widens a window's bounds to hold [start, end). A filed window stays filed under its old
   * end: `closedBy` re-files a grown one when it comes up.
   */
  widen(window: WindowId, start: number, end: number): void {
    const { numbers } = this;
    const row = window * ROW;
    numbers[row + START] = Math.min(numbers[row + START] as number, start);
    numbers[row + END] = Math.max(numbers[row + END] as number, end);
  }

  /** Empties a window a flush published, to be continued (its next outputs say so). */
  empty(window: WindowId): void {
    this.numbers[window * ROW + COUNT] = 0;
    const accumulator = this.accumulators[window];
    if (typeof accumulator === 'object' || typeof accumulator === 'function') {
      this.accumulators[window] = undefined as A;
    }
    this.flags[window] = ((this.flags[window] as number) & ~CHANGED) | CONTINUES;
  }

  /** Marks a window changed since its last early update ('each-result'). */
  markChanged(window: WindowId): void {
    const flags = this.flags[window] as number;
    if ((flags & CHANGED) !== 0) return;
    this.flags[window] = flags | CHANGED;
    this.changed.push(window);
  }

  /**
   * Puts into `into` (empty) the open windows marked changed, in creation order, and unmarks
   * them: as many as changed, whatever the number of open windows.
   */
  takeChanged(into: WindowId[]): void {
    const { changed, flags } = this;
    for (let i = 0; i < changed.length; i++) {
      const window = changed[i] as WindowId;
      const flag = flags[window] as number;
      // A window closed since it was marked is unmarked; one marked twice is taken once.
      if ((flag & CHANGED) === 0) continue;
      flags[window] = flag & ~CHANGED;
      into.push(window);
    }
    changed.length = 0;
    if (into.length > 1) into.sort(this.creationOrder);
  }

  /** Unmarks every changed window. */
  clearChanged(): void {
    const { changed, flags } = this;
    for (let i = 0; i < changed.length; i++) {
      const window = changed[i] as WindowId;
      flags[window] = (flags[window] as number) & ~CHANGED;
    }
    changed.length = 0;
  }

  isOpen(window: WindowId): boolean {
    return ((this.flags[window] as number) & OPEN) !== 0;
  }

  key(window: WindowId): Key {
    return this.keys[window] as Key;
  }

  start(window: WindowId): number {
    return this.numbers[window * ROW + START] as number;
  }

  end(window: WindowId): number {
    return this.numbers[window * ROW + END] as number;
  }

  /** Elements the window holds (0 for a new one, or one a flush emptied). */
  count(window: WindowId): number {
    return this.numbers[window * ROW + COUNT] as number;
  }

  /** The window's accumulator; undefined (as A) while it holds no element. */
  accumulator(window: WindowId): A {
    return this.count(window) > 0 ? (this.accumulators[window] as A) : (undefined as A);
  }

  firstOffset(window: WindowId): bigint {
    return this.offsets[window * ROW + FIRST_OFFSET] as bigint;
  }

  watermarkBefore(window: WindowId): number {
    return this.numbers[window * ROW + WATERMARK_BEFORE] as number;
  }

  continues(window: WindowId): boolean {
    return ((this.flags[window] as number) & CONTINUES) !== 0;
  }

  skip(window: WindowId): number {
    return this.links[window * LINKS + SKIP] as number;
  }

  setSkip(window: WindowId, skip: number): void {
    this.links[window * LINKS + SKIP] = skip;
  }

  private readonly creationOrder = (a: WindowId, b: WindowId): number =>
    (this.numbers[a * ROW + SEQ] as number) - (this.numbers[b * ROW + SEQ] as number);

  /** `key`'s slot in the key index, or NO_SLOT. */
  private slotOf(key: Key): KeySlot {
    if (key !== this.lookedUp) {
      this.lookedUp = key;
      this.lookedUpSlot = this.slotOfKey.get(key) ?? NO_SLOT;
    }
    return this.lookedUpSlot;
  }

  /** A slot for `key`, which has no window but its first, `window`, now. */
  private newSlot(key: Key, window: WindowId): KeySlot {
    let slot = this.freeSlot;
    if (slot === NO_SLOT) {
      if (this.slotsUsed === this.firstOfSlot.length) {
        const capacity = Math.max(16, Math.ceil(this.slotsUsed * 1.25));
        const grown = new Int32Array(capacity);
        grown.set(this.firstOfSlot);
        this.firstOfSlot = grown;
        const idleSince = new Int32Array(capacity);
        idleSince.set(this.idleSince);
        this.idleSince = idleSince;
      }
      slot = this.slotsUsed++;
    } else {
      this.freeSlot = this.firstOfSlot[slot] as KeySlot;
    }
    this.firstOfSlot[slot] = window;
    this.slotOfKey.set(key, slot);
    this.keyGotWindows();
    this.lookedUp = key;
    this.lookedUpSlot = slot;
    return slot;
  }

  /**
   * Drops from the key index the keys idle since before the last sweep, their slots free for
   * other keys: the index follows the keys seen lately, whatever the keys seen ever.
   */
  private sweepKeys(): void {
    const { firstOfSlot, idleSince, sweeps } = this;
    for (const [key, slot] of this.slotOfKey) {
      if (firstOfSlot[slot] !== NO_WINDOW || (idleSince[slot] as number) >= sweeps) continue;
      this.slotOfKey.delete(key);
      firstOfSlot[slot] = this.freeSlot;
      this.freeSlot = slot;
    }
    this.lookedUp = NO_KEY; // its slot may be one just freed
    this.sweeps++;
    this.idled = 0;
    this.sweepAfter = Math.max(MIN_SWEEP_PERIOD, this.mostKeysWithWindows);
    this.mostKeysWithWindows = this.keysWithWindows;
  }

  private keyGotWindows(): void {
    if (++this.keysWithWindows > this.mostKeysWithWindows) {
      this.mostKeysWithWindows = this.keysWithWindows;
    }
  }

  /** The open window created after `window`, or NO_WINDOW. */
  private nextCreated(window: WindowId): WindowId {
    return this.links[window * LINKS + NEXT_CREATED] as number;
  }

  private allocate(): WindowId {
    const free = this.freeHead;
    if (free !== NO_WINDOW) {
      this.freeHead = this.nextOfKey(free);
      this.freeCount--;
      return free;
    }
    if (this.used === this.capacity) this.grow();
    return this.used++;
  }

  /** By a quarter: a column's unused tail stays under a fifth of it (state is what grows). */
  private grow(): void {
    const capacity = Math.max(16, Math.ceil(this.capacity * 1.25));
    const numbers = new Float64Array(capacity * ROW);
    numbers.set(this.numbers);
    const links = new Int32Array(capacity * LINKS);
    links.set(this.links);
    const flags = new Uint8Array(capacity);
    flags.set(this.flags);
    this.numbers = numbers;
    this.offsets = new BigInt64Array(numbers.buffer);
    this.links = links;
    this.flags = flags;
    this.capacity = capacity;
  }
}
