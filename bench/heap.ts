// The heap reading of the memory probes, which run in a child with --expose-gc.

/**
 * A function that runs a full collection and returns the retained memory: `heapUsed` plus
 * `arrayBuffers`, the backing stores of typed arrays and Buffers, which V8 keeps outside its
 * heap (state held in typed arrays would not show in `heapUsed` alone). Throws at once, naming
 * `probe`, when the process was not started with --expose-gc.
 */
export function heapAfterFullGc(probe: string): () => number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error(`${probe} needs --expose-gc`);
  const collect = gc;
  return () => {
    collect();
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    return heapUsed + arrayBuffers;
  };
}
