/**
 * A binary min-heap of window ids by the end each was filed under, in typed arrays: a window
 * costs 12 bytes here and no object, and the ends compared lie next to each other. Ties come
 * out in no particular order (the caller sorts what closes together).
 */
export class WindowEndHeap {
  private ends = new Float64Array(16);
  private ids = new Int32Array(16);
  private length = 0;

  get size(): number {
    return this.length;
  }

  /** The least end filed (the heap must not be empty). */
  peekEnd(): number {
    return this.ends[0] as number;
  }

  push(id: number, end: number): void {
    if (this.length === this.ids.length) this.grow();
    this.siftUp(this.length++, id, end);
  }

  /** Removes the window with the least end and gives its id (the heap must not be empty). */
  pop(): number {
    const { ends, ids } = this;
    const top = ids[0] as number;
    const last = --this.length;
    if (last > 0) this.siftDown(ids[last] as number, ends[last] as number);
    return top;
  }

  /** Places `id` at the hole `index` or above it. */
  private siftUp(index: number, id: number, end: number): void {
    const { ends, ids } = this;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const parentEnd = ends[parent] as number;
      if (parentEnd <= end) break;
      ends[index] = parentEnd;
      ids[index] = ids[parent] as number;
      index = parent;
    }
    ends[index] = end;
    ids[index] = id;
  }

  /** Places `id` at the hole at the root or below it. */
  private siftDown(id: number, end: number): void {
    const { ends, ids, length } = this;
    let index = 0;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= length) break;
      if (child + 1 < length && (ends[child + 1] as number) < (ends[child] as number)) child++;
      const childEnd = ends[child] as number;
      if (childEnd >= end) break;
      ends[index] = childEnd;
      ids[index] = ids[child] as number;
      index = child;
    }
    ends[index] = end;
    ids[index] = id;
  }

  private grow(): void {
    const capacity = Math.ceil(this.ids.length * 1.25);
    const ends = new Float64Array(capacity);
    const ids = new Int32Array(capacity);
    ends.set(this.ends);
    ids.set(this.ids);
    this.ends = ends;
    this.ids = ids;
  }
}
