import { SourceError, StreamWindowsError, describe } from '../common/errors.js';

/** Where an injected fault stops a job's publish (see `FaultSpec`). */
export type FaultPoint =
  'before-publish' | 'after-publish' | 'after-confirm' | 'lose-confirm' | 'refuse-publish';

/**
 * The embedded broker's stand-in for a process dying. Deliberately NOT a
 * `StreamWindowsError`: the runner must treat it like any unexpected failure (stop, no retry),
 * exactly as it would never see anything after a real crash.
 */
export class SimulatedCrash extends Error {
  /** `'SimulatedCrash'`, as `error.name` and log lines show it. */
  override readonly name = 'SimulatedCrash';
  constructor(
    /** The target stream of the crashed publish. */
    readonly stream: string,
    /** The producer name of the crashed publish. */
    readonly producer: string,
    /** Where in the publish the fault stopped it. */
    readonly point: FaultPoint,
  ) {
    super(`simulated crash of producer '${producer}' on stream '${stream}' at ${point}`);
  }
}

/** The stream was never created or has been deleted (RabbitMQ: STREAM_DOES_NOT_EXIST, code 2). */
export class StreamNotFoundError extends StreamWindowsError {
  override readonly name = 'StreamNotFoundError';
  override readonly code = 'STREAM_NOT_FOUND';
  constructor(
    /** The stream asked for. */
    readonly stream: string,
  ) {
    super(`stream '${stream}' does not exist`);
  }
}

/**
 * A single active consumer's `resumeFrom` or `onDeactivate` failed, so it could not answer
 * the broker: like a RabbitMQ client whose ConsumerUpdate answer fails, it has left its group
 * (the next member takes over) and its reads end with this error. Retriable: joining again
 * may succeed. A `resumeFrom` that failed with an error that is not retriable ends the reads
 * with that error instead, as on RabbitMQ.
 */
export class SingleActiveMemberLostError extends SourceError {
  override readonly name = 'SingleActiveMemberLostError';
  override readonly code = 'SINGLE_ACTIVE_MEMBER_LOST';
  constructor(
    stream: string,
    /** The single active consumer group it left. */
    readonly group: string,
    /** Which of its callbacks failed. */
    readonly callback: 'resumeFrom' | 'onDeactivate',
    /** What the callback threw. */
    override readonly cause: unknown,
  ) {
    super(
      stream,
      true,
      `single active consumer '${group}' left its group: ${callback} failed: ${describe(cause)}`,
    );
  }
}
