import { runInChild } from '../child.js';
import type { CaseResult } from '../report.js';
import type { RetainedBytes } from './memory-probe.js';
import { EVENT_TIME_KINDS } from './jobs.js';
import { OPEN_KEY_COUNTS } from './throughput.js';

/**
 * Retained heap of each kind's open windows with 1, 1,000 and 100,000 keys open (the first
 * burst of the throughput source, `messages` as there), in a child process with --expose-gc
 * (and --single-threaded-gc, so that typed arrays freed are released by the collection)
 * whose heap holds nothing else. Per open key, and against the step tumbling window's state.
 */
export async function eventTimeMemoryCases(
  messages: number,
  keyCounts: readonly number[] = OPEN_KEY_COUNTS,
): Promise<CaseResult[]> {
  const probes = await runInChild<{ keys: number; bytes: RetainedBytes }[]>(
    new URL('./memory-probe.ts', import.meta.url),
    [String(messages), keyCounts.join(',')],
    ['--expose-gc', '--single-threaded-gc'],
  );
  return probes.flatMap(({ keys, bytes }) =>
    (['step-tumbling', ...EVENT_TIME_KINDS] as const).map((kind): CaseResult => ({
      name: `event-time-state/${kind}/${keys}-open-keys`,
      kind: 'event-time',
      msgsPerSec: Number.NaN,
      ratios: {},
      values: {
        retainedBytes: bytes[kind],
        heapBytesPerKey: bytes[kind] / keys,
        ...(kind === 'step-tumbling'
          ? {}
          : { stepTumblingBytes: bytes[kind] / bytes['step-tumbling'] }),
      },
    })),
  );
}
