import { runInChild } from './child.js';
import type { CaseResult } from './report.js';

/** What memory-probe.ts measures; see there for the method. */
export interface MemoryProbe {
  readonly keys: number;
  readonly bytesPerOpenKey: number;
  readonly windows: number;
  readonly bytesPerOpenWindow: number;
  readonly adds: number;
  readonly addsPerSec: number;
  readonly bytesPerAddFloat: number;
  readonly bytesPerAddInteger: number;
  /** Garbage collections that ran inside a measured interval (then the figure is a lower bound). */
  readonly collectionsDuringAdds: number;
}

/**
 * Case 4, in a child process: it needs `gc()` (--expose-gc), a new space large enough that
 * no scavenge runs while allocations are counted, and a heap free of the other cases' garbage.
 */
export async function memoryCases(keys: number, adds: number): Promise<CaseResult[]> {
  const probe = await runInChild<MemoryProbe>(
    new URL('./memory-probe.ts', import.meta.url),
    [String(keys), String(adds)],
    ['--expose-gc', '--min-semi-space-size=128', '--max-semi-space-size=128'],
  );
  return [
    {
      name: `window-buffer/${probe.keys}-open-keys`,
      kind: 'memory',
      msgsPerSec: Number.NaN,
      ratios: {},
      values: { heapBytesPerKey: probe.bytesPerOpenKey },
    },
    {
      name: `step-processor/${probe.windows}-open-windows`,
      kind: 'memory',
      msgsPerSec: Number.NaN,
      ratios: {},
      values: { heapBytesPerWindow: probe.bytesPerOpenWindow },
    },
    {
      name: `window-buffer/${probe.adds}-adds-to-known-keys`,
      kind: 'memory',
      msgsPerSec: probe.addsPerSec,
      ratios: {},
      values: {
        allocatedBytesPerAddDouble: probe.bytesPerAddFloat,
        allocatedBytesPerAddSmallInt: probe.bytesPerAddInteger,
        collectionsDuringAdds: probe.collectionsDuringAdds,
      },
      notes: ['one timed pass in a fresh child (no rounds, so no spread)'],
    },
  ];
}
