// Random crashes of a job on the embedded broker: faults injected into the target's publishes.
import fc from 'fast-check';
import { MemoryBroker, SimulatedCrash, type FaultPoint } from '../../../src/memory/index.js';
import { readStepId, type RunOptions, type StepId, type Target } from '../../../src/index.js';
import type { Coverage } from './coverage.js';

export interface Crash {
  readonly atPublish: number;
  readonly point: FaultPoint;
}

/** Any of the four points of a publish where the embedded broker can crash a job. */
export const faultPointArb: fc.Arbitrary<FaultPoint> = fc.constantFrom<FaultPoint>(
  'before-publish',
  'after-publish',
  'after-confirm',
  'lose-confirm',
);

/** 1 to 8 crashes, each at one of a run's first 12 publishes, at any of the four fault points. */
export const crashArb: fc.Arbitrary<Crash[]> = fc.array(
  fc.record({ atPublish: fc.integer({ min: 1, max: 12 }), point: faultPointArb }),
  { minLength: 1, maxLength: 8, size: 'max' },
);

/** A job, or what a test builds in its place: run to the end of its source. */
export interface Runnable {
  run(options: RunOptions): Promise<unknown>;
}

/**
 * One run of `job` to the end of its source with `fault` armed, then faults cleared for the
 * restart: whether the fault fired, and whether the run died of it (a `SimulatedCrash`; any
 * other error is rethrown). A fault may fire without a crash: after a confirm the crash comes
 * with the target's next call, which a run may not make, and a lost confirm is retried.
 */
export async function runCrashing(
  broker: MemoryBroker,
  fault: Parameters<MemoryBroker['injectFault']>[0],
  job: Runnable,
): Promise<{ fired: boolean; crashed: boolean }> {
  const armed = broker.injectFault(fault);
  let crashed = false;
  try {
    await job.run({ untilCaughtUp: true });
  } catch (error) {
    if (!(error instanceof SimulatedCrash)) throw error;
    crashed = true;
  }
  broker.clearFaults();
  return { fired: armed.fired, crashed };
}

/**
 * Runs a fresh job once per crash with that fault armed on `stream`, then once without, as
 * restarts after crashes would. Returns how many of the runs crashed. With `coverage`, counts
 * 'crashes fired', '<point> fired' and 'crashes after a stored result' (a fault that fired
 * when `stream` already held a result: the restart must then resume past it).
 */
export async function runThroughCrashes(
  broker: MemoryBroker,
  stream: string,
  crashes: readonly Crash[],
  job: () => Runnable,
  coverage?: Coverage,
): Promise<number> {
  let crashed = 0;
  for (const crash of crashes) {
    const run = await runCrashing(
      broker,
      {
        stream,
        ...crash,
        onFire: () => {
          coverage?.count('crashes after a stored result', broker.messages(stream).length > 0);
        },
      },
      job(),
    );
    if (run.crashed) crashed++;
    coverage?.count('crashes fired', run.fired);
    coverage?.count(`${crash.point} fired`, run.fired);
  }
  await job().run({ untilCaughtUp: true });
  return crashed;
}

/**
 * Runs a fresh job (`job()`, publishing to `stream` as `target`'s producer) once per crash,
 * each armed at one of the `writes` an uninterrupted run makes (so that most fire, between the
 * writes of one step too), then once without. Counts in `coverage` 'crashes fired' and 'crashes
 * leaving a step not whole' (the broker's last id then names a write before its step's last);
 * `afterRun` sees each crashed run's outcome.
 */
export async function runThroughWriteCrashes(
  broker: MemoryBroker,
  target: Target,
  crashes: readonly Crash[],
  writes: number,
  job: () => Runnable,
  coverage: Coverage,
  afterRun?: (run: { readonly fired: boolean; readonly last: StepId }) => Promise<void>,
): Promise<void> {
  for (const crash of crashes) {
    const atPublish = 1 + ((crash.atPublish * 7) % Math.max(1, writes));
    const { fired } = await runCrashing(
      broker,
      { stream: target.stream, ...crash, atPublish },
      job(),
    );
    const last = readStepId(await target.lastPublishingId());
    coverage.count('crashes fired', fired);
    coverage.count(
      'crashes leaving a step not whole',
      fired && last.kind === 'write' && !last.last,
    );
    await afterRun?.({ fired, last });
  }
  await job().run({ untilCaughtUp: true });
}
