// The heap reading of the memory probes, which run in a child with --expose-gc.

/**
 * A function that runs a full collection and returns `heapUsed`: the retained heap. Throws
 * at once, naming `probe`, when the process was not started with --expose-gc.
 */
export function heapAfterFullGc(probe: string): () => number {
  return afterFullGc(probe, ({ heapUsed }) => heapUsed);
}

/**
 * As `heapAfterFullGc`, plus `arrayBuffers`: the backing stores of typed arrays and Buffers,
 * which V8 keeps outside its heap, so that state held in typed arrays counts. The child must
 * also run with --single-threaded-gc: otherwise freed backing stores are released by a
 * background thread, at some time after the collection.
 */
export function retainedAfterFullGc(probe: string): () => number {
  return afterFullGc(probe, ({ heapUsed, arrayBuffers }) => heapUsed + arrayBuffers);
}

function afterFullGc(probe: string, read: (usage: NodeJS.MemoryUsage) => number): () => number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error(`${probe} needs --expose-gc`);
  const collect = gc;
  return () => {
    collect();
    return read(process.memoryUsage());
  };
}
