// The two jobs of the pipeline example, shared by examples/pipeline.ts and the differential
// test: stage 1 counts readings per sensor per minute; stage 2 reads stage 1's results and
// totals them per hour across sensors.
import { aggregate, fromResults, jsonMessage } from '../src/index.js';
import type { PackMode, Runner, Source, Target } from '../src/index.js';

export const SENSORS = ['s1', 's2', 's3'];
/** Each sensor reads every 20 s: 3 readings a minute, 180 an hour; 540 an hour for all three. */
export const READING_EVERY_S = 20;
export const START = Date.UTC(2026, 0, 1, 0, 0, 0);

/**
 * The source, one chunk per minute: three hours, then two minutes more, so that stage 1's
 * minute 03:00 closes stage 2's hour 02:00 (the minute 03:01 and the hour 03:00 stay open).
 */
export function minutesOfReadings(): Uint8Array[][] {
  return Array.from({ length: 3 * 60 + 2 }, (_, minute) =>
    Array.from(
      { length: 60 / READING_EVERY_S },
      (_, i) => minute * 60 + i * READING_EVERY_S,
    ).flatMap((second) =>
      SENSORS.map((sensor) =>
        jsonMessage({ sensor, celsius: 20 }, { creationTime: START + second * 1000 }),
      ),
    ),
  );
}

/**
 * Stage 1: one result a minute with one output per sensor, its count: here three data sections
 * of one message ('sections'), or with 'batch' three messages of one sub-entry batch (the
 * default, 'single', would be one array in one data section: stage 2 reads any of them).
 */
export function stageOne(
  source: Source,
  target: Target,
  pack: PackMode = 'sections',
): Runner<unknown, unknown, unknown> {
  return aggregate<{ sensor: string }>(source)
    .tumbling('1m')
    .key((reading) => reading.sensor)
    .reduce((count: number) => count + 1, 0)
    .to(target, { pack }) as Runner<unknown, unknown, unknown>;
}

/**
 * Stage 2: every output of every stage-1 result, event time = its minute's start, totalled
 * per hour. Stage 1 publishes neither late values nor dead letters here; skipping them is
 * still said out loud.
 */
export function stageTwo(source: Source, target: Target): Runner<unknown, unknown, unknown> {
  return aggregate(fromResults<number>(source, { late: 'skip', deadLetters: 'skip' }))
    .tumbling('1h')
    .aggregate({
      init: () => ({ readings: 0, minutes: new Set<number>() }),
      add: (acc, perSensorMinute) => {
        acc.minutes.add(perSensorMinute.start);
        return { readings: acc.readings + perSensorMinute.value, minutes: acc.minutes };
      },
      result: (acc) => ({ readings: acc.readings, minutes: acc.minutes.size }),
    })
    .to(target) as Runner<unknown, unknown, unknown>;
}
