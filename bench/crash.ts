// The crash step of the restart benches: run 1 of a job, stopped before its second result.
import type { Target } from '../src/ports/ports.js';
import type { Runner } from '../src/engine/runner.js';
import type { MemoryBroker } from '../src/memory/broker.js';
import { SimulatedCrash } from '../src/memory/errors.js';

/**
 * Runs the job `job` builds on `stream` (producer 'bench') to caught up, with a fault before
 * its second publish, so that its first result is stored and its second never is. True when
 * it stopped with that crash (SimulatedCrash); false when it finished without it.
 */
export async function crashBeforeSecondResult<T, A, R>(
  broker: MemoryBroker,
  stream: string,
  job: (target: Target) => Runner<T, A, R>,
): Promise<boolean> {
  broker.injectFault({ stream, atPublish: 2, point: 'before-publish' });
  return job(broker.target(stream, { producer: 'bench' }))
    .run({ untilCaughtUp: true })
    .then(
      () => false,
      (error: unknown) => error instanceof SimulatedCrash,
    );
}
