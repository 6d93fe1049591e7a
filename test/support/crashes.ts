// Random crashes of a job on the embedded broker: faults injected into the target's publishes.
import fc from 'fast-check';
import { MemoryBroker, SimulatedCrash, type FaultPoint } from '../../src/memory/index.js';
import type { RunOptions } from '../../src/index.js';

export interface Crash {
  readonly atPublish: number;
  readonly point: FaultPoint;
}

export const crashArb: fc.Arbitrary<Crash[]> = fc.array(
  fc.record({
    atPublish: fc.integer({ min: 1, max: 8 }),
    point: fc.constantFrom<FaultPoint>(
      'before-publish',
      'after-publish',
      'after-confirm',
      'lose-confirm',
    ),
  }),
  { maxLength: 6 },
);

/**
 * Runs a fresh job once per crash with that fault armed on `stream`, then once without, as
 * restarts after crashes would. Returns how many of the runs crashed.
 */
export async function runThroughCrashes(
  broker: MemoryBroker,
  stream: string,
  crashes: readonly Crash[],
  job: () => { run(options: RunOptions): Promise<unknown> },
): Promise<number> {
  let crashed = 0;
  for (const crash of crashes) {
    broker.injectFault({ stream, ...crash });
    try {
      await job().run({ untilCaughtUp: true });
    } catch (error) {
      if (!(error instanceof SimulatedCrash)) throw error;
      crashed++;
    }
    broker.clearFaults();
  }
  await job().run({ untilCaughtUp: true });
  return crashed;
}
