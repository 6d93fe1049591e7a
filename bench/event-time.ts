/**
 * Event-time windows (issue 12's benchmark): throughput and retained state with 1, 1,000 and
 * 100,000 open keys against the step tumbling window, the time a restart from a result takes,
 * and the recovery state's bytes in a result. Parts in bench/event-time/.
 */
import { DEFAULT_FRAME_MAX } from '../src/ports/write-size.js';
import { eventTimeMemoryCases } from './event-time/memory.js';
import { eventTimeRecoveryCases, RECOVERY_OPEN_KEYS } from './event-time/recovery.js';
import { recoveryStateSizeCases } from './event-time/recovery-state-size.js';
import { eventTimeThroughputCases, OPEN_KEY_COUNTS } from './event-time/throughput.js';
import type { CaseResult } from './report.js';

export interface EventTimeSizes {
  /** Open keys of the throughput and state cases. */
  readonly openKeys: readonly number[];
  /** Open windows at the crash of the restart cases. */
  readonly restartKeys: readonly number[];
  /** Open keys of the two count results whose difference gives bytes per open key. */
  readonly countKeys: readonly [number, number];
  /** The frame_max under which the most open count keys in one result are found. */
  readonly frameMax: number;
}

const FULL_SIZES: EventTimeSizes = {
  openKeys: OPEN_KEY_COUNTS,
  restartKeys: RECOVERY_OPEN_KEYS,
  countKeys: [1_000, 10_000],
  frameMax: DEFAULT_FRAME_MAX,
};

export async function eventTimeCases(
  messages: number,
  repeats: number,
  sizes: EventTimeSizes = FULL_SIZES,
): Promise<CaseResult[]> {
  return [
    ...(await eventTimeThroughputCases(messages, repeats, sizes.openKeys)),
    ...(await eventTimeMemoryCases(messages, sizes.openKeys)),
    ...(await eventTimeRecoveryCases(repeats, sizes.restartKeys)),
    ...(await recoveryStateSizeCases(sizes.countKeys, sizes.frameMax)),
  ];
}
