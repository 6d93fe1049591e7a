/**
 * A binary min-heap of window ids by the end each was filed under, then by their creation
 * order, in typed arrays: a window costs 20 bytes here and no object, and what is compared lies
 * next to each other. Windows come out in (end, creation) order (./window-end-queue.ts).
 */
export class WindowEndHeap {
  private ends = new Float64Array(16);
  private seqs = new Float64Array(16);
  private ids = new Int32Array(16);
  private length = 0;

  get size(): number {
    return this.length;
  }

  /** The least end filed (the heap must not be empty). */
  peekEnd(): number {
    return this.ends[0] as number;
  }

  /** Whether the heap's first window comes before (end, seq) (the heap must not be empty). */
  comesBefore(end: number, seq: number): boolean {
    const first = this.ends[0] as number;
    return first < end || (first === end && (this.seqs[0] as number) < seq);
  }

  push(id: number, end: number, seq: number): void {
    if (this.length === this.ids.length) this.grow();
    this.siftUp(this.length++, id, end, seq);
  }

  /** Removes the first window and gives its id (the heap must not be empty). */
  pop(): number {
    const { ends, seqs, ids } = this;
    const top = ids[0] as number;
    const last = --this.length;
    if (last > 0) this.siftDown(ids[last] as number, ends[last] as number, seqs[last] as number);
    return top;
  }

  /** Places `id` at the hole `index` or above it. */
  private siftUp(index: number, id: number, end: number, seq: number): void {
    const { ends, seqs, ids } = this;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const parentEnd = ends[parent] as number;
      if (parentEnd < end || (parentEnd === end && (seqs[parent] as number) < seq)) break;
      ends[index] = parentEnd;
      seqs[index] = seqs[parent] as number;
      ids[index] = ids[parent] as number;
      index = parent;
    }
    ends[index] = end;
    seqs[index] = seq;
    ids[index] = id;
  }

  /** Places `id` at the hole at the root or below it. */
  private siftDown(id: number, end: number, seq: number): void {
    const { ends, seqs, ids, length } = this;
    let index = 0;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= length) break;
      const right = child + 1;
      if (right < length) {
        const rightEnd = ends[right] as number;
        const leftEnd = ends[child] as number;
        if (
          rightEnd < leftEnd ||
          (rightEnd === leftEnd && (seqs[right] as number) < (seqs[child] as number))
        ) {
          child = right;
        }
      }
      const childEnd = ends[child] as number;
      if (childEnd > end || (childEnd === end && (seqs[child] as number) > seq)) break;
      ends[index] = childEnd;
      seqs[index] = seqs[child] as number;
      ids[index] = ids[child] as number;
      index = child;
    }
    ends[index] = end;
    seqs[index] = seq;
    ids[index] = id;
  }

  /** By a quarter, as the windows' own columns. */
  private grow(): void {
    const capacity = Math.ceil(this.ids.length * 1.25);
    const ends = new Float64Array(capacity);
    const seqs = new Float64Array(capacity);
    const ids = new Int32Array(capacity);
    ends.set(this.ends);
    seqs.set(this.seqs);
    ids.set(this.ids);
    this.ends = ends;
    this.seqs = seqs;
    this.ids = ids;
  }
}
