import { WindowEndHeap } from './window-end-heap.js';

/**
 * Window ids in (end, creation) order, for "which windows has the watermark closed": windows
 * filed in that order already (aligned windows, nearly all: their ends follow event time) go
 * to a ring in typed arrays, where filing and taking the first cost O(1); the others to a
 * heap. The first window is the first of either.
 */
export class WindowEndQueue {
  private ends = new Float64Array(16);
  private seqs = new Float64Array(16);
  private ids = new Int32Array(16);
  /** The ring's first entry and its length; entry i is at (head + i) % capacity. */
  private head = 0;
  private length = 0;
  private readonly heap = new WindowEndHeap();

  get size(): number {
    return this.length + this.heap.size;
  }

  /** The least end filed (the queue must not be empty). */
  peekEnd(): number {
    if (this.length === 0) return this.heap.peekEnd();
    const end = this.ends[this.head] as number;
    return this.heap.size > 0 ? Math.min(end, this.heap.peekEnd()) : end;
  }

  push(id: number, end: number, seq: number): void {
    const { length } = this;
    if (length > 0) {
      const last = (this.head + length - 1) % this.ids.length;
      const lastEnd = this.ends[last] as number;
      if (end < lastEnd || (end === lastEnd && seq < (this.seqs[last] as number))) {
        this.heap.push(id, end, seq);
        return;
      }
    }
    if (length === this.ids.length) this.grow();
    const at = (this.head + length) % this.ids.length;
    this.ends[at] = end;
    this.seqs[at] = seq;
    this.ids[at] = id;
    this.length++;
  }

  /** Removes the first window and gives its id (the queue must not be empty). */
  pop(): number {
    const { heap, head } = this;
    if (
      this.length === 0 ||
      (heap.size > 0 && heap.comesBefore(this.ends[head] as number, this.seqs[head] as number))
    ) {
      return heap.pop();
    }
    this.head = (head + 1) % this.ids.length;
    this.length--;
    return this.ids[head] as number;
  }

  /** By a quarter, as the windows' own columns; the ring unwrapped to start at 0. */
  private grow(): void {
    const capacity = Math.ceil(this.ids.length * 1.25);
    const ends = new Float64Array(capacity);
    const seqs = new Float64Array(capacity);
    const ids = new Int32Array(capacity);
    for (let i = 0; i < this.length; i++) {
      const from = (this.head + i) % this.ids.length;
      ends[i] = this.ends[from] as number;
      seqs[i] = this.seqs[from] as number;
      ids[i] = this.ids[from] as number;
    }
    this.ends = ends;
    this.seqs = seqs;
    this.ids = ids;
    this.head = 0;
  }
}
