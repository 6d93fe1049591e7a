import { StreamWindowsError } from '../common/errors.js';

/** Where an injected fault stops a job's publish (see `FaultSpec`). */
export type FaultPoint = 'before-publish' | 'after-publish' | 'after-confirm' | 'lose-confirm';

/**
 * The embedded broker's stand-in for a process dying. Deliberately NOT a
 * `StreamWindowsError`: the runner must treat it like any unexpected failure (stop, no retry),
 * exactly as it would never see anything after a real crash.
 */
export class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
  constructor(
    readonly stream: string,
    readonly producer: string,
    readonly point: FaultPoint,
  ) {
    super(`simulated crash of producer '${producer}' on stream '${stream}' at ${point}`);
  }
}

/** The stream was never created or has been deleted (RabbitMQ: STREAM_DOES_NOT_EXIST, code 2). */
export class StreamNotFoundError extends StreamWindowsError {
  override readonly name = 'StreamNotFoundError';
  constructor(readonly stream: string) {
    super(`stream '${stream}' does not exist`);
  }
}
