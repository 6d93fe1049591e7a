import type { Key } from '../common/keyed-output.js';

/** One open event-time window of one key. Mutated in place while it is open. */
export interface OpenWindow<A> {
  readonly key: Key;
  start: number;
  end: number;
  /** Offset of the window's first element: a restart must re-read from here. */
  readonly firstOffset: bigint;
  /** The watermark in force before that element (what a restart from it must restore). */
  readonly watermarkBefore: number;
  /** Creation order: ties between windows closing together are broken by it. */
  readonly seq: number;
  accumulator: A;
  count: number;
  /** Event-time range of the elements (count windows report [earliest, latest + 1)). */
  minTime: number;
  maxTime: number;
  open: boolean;
  /** The `end` this window is filed under in the closing heap (ends only grow). */
  heapEnd: number;
  /** Early updates: whether elements came since the window's last early output. */
  changed: boolean;
  /** A flush published and emptied this window: its next outputs continue that one. */
  continues: boolean;
  /**
   * Count windows over multi-value messages: values of the key at `firstOffset` that belong
   * to earlier windows (a restart skips as many there).
   */
  skip: number;
}

/**
 * Where the state of event-time windows lives: the open windows of every key, in three
 * orders, each kept for one question the operator asks on its hot path:
 * - by key (a key's open windows, usually one or two): where does an element go;
 * - by end (a binary heap): which windows has the watermark closed;
 * - by creation (a queue): what is the first offset any open window still needs, the re-read
 *   point a result records. Windows are created in offset order and a merged session keeps
 *   the older window, so the oldest open window holds the least first offset.
 * Closed and merged-away windows are dropped from the heap and the queue lazily.
 */
export class KeyedWindows<A> {
  private readonly byKey = new Map<Key, OpenWindow<A>[]>();
  private readonly heap: OpenWindow<A>[] = [];
  private byCreation: OpenWindow<A>[] = [];
  private head = 0;
  private nextSeq = 0;
  private openCount = 0;

  /** Windows open now. */
  get size(): number {
    return this.openCount;
  }

  /** Windows the creation queue holds: the open ones, and closed ones not dropped yet. */
  get queued(): number {
    return this.byCreation.length - this.head;
  }

  /** The open windows of `key`, in creation order; do not keep the array. */
  of(key: Key): readonly OpenWindow<A>[] {
    return this.byKey.get(key) ?? NONE;
  }

  create(
    key: Key,
    start: number,
    end: number,
    firstOffset: bigint,
    watermarkBefore: number,
    accumulator: A,
  ): OpenWindow<A> {
    const window: OpenWindow<A> = {
      key,
      start,
      end,
      firstOffset,
      watermarkBefore,
      seq: this.nextSeq++,
      accumulator,
      count: 0,
      minTime: Number.POSITIVE_INFINITY,
      maxTime: Number.NEGATIVE_INFINITY,
      open: true,
      heapEnd: end,
      changed: false,
      continues: false,
      skip: 0,
    };
    const windows = this.byKey.get(key);
    if (windows === undefined) this.byKey.set(key, [window]);
    else windows.push(window);
    this.byCreation.push(window);
    this.openCount++;
    return window;
  }

  /**
   * Files a window (not filed yet) under its end for `closedBy`; count windows, closed by
   * count, never are. A window's end may grow while it is filed: it is re-filed when it comes
   * up, so that the heap's order is never changed under it.
   */
  schedule(window: OpenWindow<A>): void {
    window.heapEnd = window.end;
    this.heap.push(window);
    this.siftUp(this.heap.length - 1);
  }

  /** Removes an open window (closed, or merged into another) from its key's windows. */
  remove(window: OpenWindow<A>): void {
    window.open = false;
    this.openCount--;
    // Closed windows behind a long-open older one would stay queued (and in memory) for as
    // long as it lives: once they outnumber the open ones, the queue keeps only open ones.
    // Each compaction drops at least half the queue, so its cost is constant per window.
    const queued = this.byCreation.length - this.head;
    if (queued > 1024 && queued > 2 * this.openCount) {
      this.byCreation = this.byCreation.filter(
        (queuedWindow, index) => index >= this.head && queuedWindow.open,
      );
      this.head = 0;
    }
    const windows = this.byKey.get(window.key);
    if (windows === undefined) return;
    const index = windows.indexOf(window);
    if (index >= 0) windows.splice(index, 1);
    if (windows.length === 0) this.byKey.delete(window.key);
  }

  /**
   * Removes the windows `isDue(end)` closes and puts them into `into` (empty: sorted in place,
   * no copy) in `closingOrder`. `isDue` must be monotonic in `end` (true for every end below
   * one that is due).
   */
  closedBy(isDue: (end: number) => boolean, into: OpenWindow<A>[]): void {
    const { heap } = this;
    while (heap.length > 0 && isDue((heap[0] as OpenWindow<A>).heapEnd)) {
      const window = this.pop();
      if (!window.open) continue; // merged away or closed: dropped lazily
      if (window.end !== window.heapEnd && !isDue(window.end)) {
        this.schedule(window); // a session that grew since it was filed
        continue;
      }
      into.push(window);
    }
    if (into.length > 1) into.sort(closingOrder);
    for (let i = 0; i < into.length; i++) this.remove(into[i] as OpenWindow<A>);
  }

  /** The oldest open window: its first offset is where a restart re-reads; undefined if none. */
  oldestOpen(): OpenWindow<A> | undefined {
    const queue = this.byCreation;
    while (this.head < queue.length && !(queue[this.head] as OpenWindow<A>).open) this.head++;
    // Drop the consumed prefix once it outweighs the rest, so the queue stays proportional.
    if (this.head > 1024 && this.head * 2 > queue.length) {
      queue.splice(0, this.head);
      this.head = 0;
    }
    return queue[this.head];
  }

  /** Open windows in creation order (for a result's per-key recovery state). */
  *openInCreationOrder(): Generator<OpenWindow<A>> {
    for (let i = this.head; i < this.byCreation.length; i++) {
      const window = this.byCreation[i] as OpenWindow<A>;
      if (window.open) yield window;
    }
  }

  private pop(): OpenWindow<A> {
    const { heap } = this;
    const top = heap[0] as OpenWindow<A>;
    const last = heap.pop() as OpenWindow<A>;
    if (heap.length > 0) {
      heap[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  private siftUp(index: number): void {
    const { heap } = this;
    const item = heap[index] as OpenWindow<A>;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!before(item, heap[parent] as OpenWindow<A>)) break;
      heap[index] = heap[parent] as OpenWindow<A>;
      index = parent;
    }
    heap[index] = item;
  }

  private siftDown(index: number): void {
    const { heap } = this;
    const item = heap[index] as OpenWindow<A>;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= heap.length) break;
      const right = child + 1;
      if (right < heap.length && before(heap[right] as OpenWindow<A>, heap[child] as OpenWindow<A>))
        child = right;
      if (!before(heap[child] as OpenWindow<A>, item)) break;
      heap[index] = heap[child] as OpenWindow<A>;
      index = child;
    }
    heap[index] = item;
  }
}

const NONE: readonly never[] = Object.freeze([]);

function before<A>(a: OpenWindow<A>, b: OpenWindow<A>): boolean {
  return a.heapEnd < b.heapEnd || (a.heapEnd === b.heapEnd && a.seq < b.seq);
}

/** The documented order of windows output together: by end, then start, then creation. */
export function closingOrder<A>(a: OpenWindow<A>, b: OpenWindow<A>): number {
  return a.end - b.end || a.start - b.start || a.seq - b.seq;
}
