// The heap reading of the memory probes, which run in a child with --expose-gc.

/**
 * A function that runs a full collection and returns `heapUsed`: the retained heap. Throws
 * at once, naming `probe`, when the process was not started with --expose-gc.
 */
export function heapAfterFullGc(probe: string): () => number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error(`${probe} needs --expose-gc`);
  const collect = gc;
  return () => {
    collect();
    return process.memoryUsage().heapUsed;
  };
}
