// The two stages of a partitioned pipeline over readings on RabbitMQ (merged-results.test.ts,
// two-stage-sigkill.test.ts and its child): stage 1 per partition, the sum per sensor and
// minute, each partition to its own result stream; stage 2 the global total per minute over
// the result streams (`mergeInputs([fromResults(...), ...])`). The readings are skewed between
// partitions and out of order within each, and end with three markers that close every minute.
import {
  aggregate,
  fromResults,
  mergeInputs,
  type Source,
  type Target,
} from '../../../src/index.js';
import type { JobSpec } from '../arbitraries/scenario.js';

export const PARTITIONS = 4;
const MINUTE = 60_000;
const START = Date.UTC(2026, 0, 1);
/** Far past the readings (about 4.5 s apart: 13,000 of them): three of these close every minute. */
export const MARKERS_FROM = START + 1_000 * MINUTE;
const MARKER = 'marker';

export interface Reading {
  readonly sensor: string;
  readonly at: number;
  readonly value: number;
}

export type Packing = Pick<JobSpec, 'pack' | 'format'>;

/**
 * Partition `partition`'s `count` readings, about 4.5 s apart in event time, partition p
 * starting p × 40 s late (skew), each up to 4 s before the latest (disorder stage 1 allows),
 * then three markers; the same every call, a smaller count the start of a larger one's.
 */
export function readingsOf(partition: number, count: number): Reading[] {
  let seed = 7 + partition;
  const next = (n: number): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  const readings: Reading[] = [];
  let latest = START + partition * 40_000;
  for (let i = 0; i < count; i++) {
    latest += next(9_000);
    readings.push({
      sensor: `s${next(3)}`,
      at: latest - next(4_000),
      value: 1 + next(100),
    });
  }
  const markers = [0, 10, 20].map((minutes) => ({
    sensor: MARKER,
    at: MARKERS_FROM + minutes * MINUTE,
    value: 0,
  }));
  return [...readings, ...markers];
}

/** The total of every reading per minute: what stage 2 must publish for the readings' minutes. */
export function referenceTotals(count: number): Map<number, number> {
  const totals = new Map<number, number>();
  for (let p = 0; p < PARTITIONS; p++) {
    for (const { sensor, at, value } of readingsOf(p, count)) {
      if (sensor === MARKER) continue;
      const minute = at - (at % MINUTE);
      totals.set(minute, (totals.get(minute) ?? 0) + value);
    }
  }
  return totals;
}

/** Stage 1 of one partition: the sum per sensor and minute. */
export const stageOne = (source: Source, target: Target, packing: Packing) =>
  aggregate<Reading>(source)
    .eventTime((reading) => reading.at)
    .key((reading) => reading.sensor)
    .tumbling('1m', { grace: '10s' })
    .maxOutOfOrderness('5s')
    .reduce((sum, reading) => sum + reading.value, 0)
    .to(target, packing);

/** Stage 2: the global total per minute over the result streams (markers add nothing). */
export const stageTwo = (sources: readonly Source[], target: Target) =>
  aggregate(
    mergeInputs(
      sources.map((source) => fromResults<number>(source, { late: 'count', deadLetters: 'skip' })),
      { idleAfter: 'never' },
    ),
  )
    .tumbling('1m', { grace: '10s' })
    .reduce((total, output) => total + (output.key === MARKER ? 0 : output.value), 0)
    .to(target);

/** Stage 1's producer name on partition `partition`'s result stream. */
export const stageOneProducer = (partition: number): string => `per-sensor-${partition}`;

/** Stage 2's producer name. */
export const STAGE_TWO_PRODUCER = 'total-per-minute';

/** Stage 1's packing in the SIGKILL test: several minutes' sums may share a result. */
export const SECTIONS: Packing = { pack: 'sections' };
