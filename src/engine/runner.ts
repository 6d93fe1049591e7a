import { sleep } from '../common/waits.js';
import type { RunOptions, RunSummary } from '../api/run-options.js';
import {
  isRetriable,
  ProcessingError,
  SourceDeactivatedError,
  StreamWindowsError,
} from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { RetryWarning } from '../common/retry-warning.js';
import {
  JobEvents,
  type JobEventName,
  type JobListener,
  type ListenerOptions,
} from '../api/job-events.js';
import type { OrderedPublisher } from './ordered-publisher.js';
import { RunLoop, type LoopJob } from './run-loop.js';
import type { Source, Target } from '../ports/ports.js';
import type { StepResult } from '../result-format/step-result.js';
import type { ProcessorConfig } from './processor-factory.js';
import { ResumePoint } from './resume/resume-point.js';
import type { JobDefinitionCheck } from './resume/definition-check.js';
import { skipCommand, skipReference, stopReference } from './skip-request.js';
import { MergedInputs } from './merge/merged-inputs.js';

/**
 * The result type of a job, for typing what reads its target:
 * `decodeResult<ResultOf<typeof job>>(bytes).outputs[0].value` and
 * `readResults<ResultOf<typeof job>>(source)` are typed as the job's aggregate result.
 */
export type ResultOf<Job> = Job extends Runner<infer _T, infer _A, infer R> ? R : never;

export interface RunnerConfig<T, A, R> {
  /** One source, or several merged (`mergeInputs`), whose merged positions are the job's offsets. */
  readonly source: Source | MergedInputs;
  readonly target: Target;
  /** A step processor's, or for event-time windows a window operator's (./processor-factory.ts). */
  readonly processor: ProcessorConfig<T, A, R>;
  /**
   * A step's writes, in order (see `encodeStep`): `previous` is the publishing id of the
   * producer's step before, `maxWriteBytes` the target's limit per write.
   */
  readonly encode: (
    result: StepResult<R>,
    writes: { readonly previous: bigint; readonly maxWriteBytes: number },
  ) => Uint8Array[][];
  /** Results awaiting their confirm at once (default 32). */
  readonly maxInFlight: number;
  /** The routing key of a step's result, for a super-stream target; none for one stream. */
  readonly route: ((result: StepResult<R>) => string) | undefined;
  /** Delay before resuming after a retriable error, doubled each time up to `maxRetryDelayMs`. */
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  /** Retries in a row without progress before a warning (see RetryWarning); Infinity: never. */
  readonly warnAfterRetries: number;
  readonly logger: Logger;
  /**
   * The job's definition its results carry (`sw-job`, see job-definition.ts), checked at every
   * start against the producer's last result; undefined with the user's own `encode`, whose
   * messages carry none. `allowChange`: a last result of another definition is gone on from,
   * with a warning, instead of stopping the job.
   */
  readonly definition: JobDefinitionCheck | undefined;
  /**
   * The name an earlier version gave this loop's producer (a partitioned job's, see
   * `.toPartitions()`): a start whose producer never published stops with a
   * ProducerRenamedError if that name did. Undefined: not checked.
   */
  readonly formerProducer?: string | undefined;
  /** When open windows are published before they end (see `FlushOptions`). */
  readonly flush: {
    readonly caughtUp: boolean;
    readonly idleMs: number | undefined;
    /**
     * The job writes the library's result format (not its own `encode`): a flushing step job's
     * start reads its last result back, to reopen the window a flush left open
     * (./resume/after-flush.ts).
     */
    readonly resultFormat: boolean;
  };
}

/**
 * The read-process-write loop. It owns offsets and publishing ids: on start (for a single
 * active consumer source, once activated) it asks the target for its producer's last
 * publishing id and reads the source from there + 1 (0 is
 * ambiguous and means "from the first offset still stored"; re-publishing id 0 is discarded by the
 * broker, so it is harmless); each step's result is published with the offset of the
 * step's last source message as its publishing id. A retriable error is handled like a
 * crash: everything since the last confirmed result is recomputed, and the broker
 * discards what it already has.
 */
export class Runner<T, A, R> {
  private readonly events: JobEvents;
  private publisher: OrderedPublisher | undefined;
  /** The run's warning of retries that get nowhere; told of progress by its loops. */
  private retryWarning: RetryWarning | undefined;
  /** What each start's RunLoop needs of this job. */
  private readonly loopJob: LoopJob<T, A, R>;

  constructor(private readonly config: RunnerConfig<T, A, R>) {
    this.events = new JobEvents((name, error) =>
      config.logger.error(
        { ...this.where(), event: name, err: error },
        `a listener of '${name}' threw; the job goes on`,
      ),
    );
    const where = (): ReturnType<typeof this.where> => this.where();
    this.loopJob = {
      config,
      events: this.events,
      // One per job: it says once that a target cannot check the former producer name.
      resumePoint: new ResumePoint({
        source: config.source,
        target: config.target,
        logger: config.logger,
        where,
        definition: config.definition,
        formerProducer: config.formerProducer,
      }),
      where,
      publishing: (publisher) => (this.publisher = publisher),
      progressed: () => this.retryWarning?.progressed(),
    };
  }

  /** The source the job reads: one stream, or several merged (`mergeInputs`). */
  get source(): Source | MergedInputs {
    return this.config.source;
  }

  /** The target the job publishes to. */
  get target(): Target {
    return this.config.target;
  }

  /** Results published and awaiting their confirm now. */
  get inFlight(): number {
    return this.publisher?.unconfirmed ?? 0;
  }

  /**
   * Observes the job (see JobEventMap for what each event carries); returns the function
   * that removes the listener. Listeners run synchronously: keep them quick.
   */
  on<K extends JobEventName>(
    name: K,
    listener: JobListener<K>,
    options?: ListenerOptions,
  ): () => void {
    return this.events.on(name, listener, options);
  }

  /**
   * Runs the job until `signal` aborts, it catches up (`untilCaughtUp`) or an error that is not
   * retriable stops it (rejecting with it); a retriable one resumes from the broker's resume point.
   * However it ends, the target's producer is released (`Target.release`) and the connection
   * left open, so the job, or one built again on that connection, can run again.
   */
  async run(options: RunOptions = {}): Promise<RunSummary> {
    const counters = { results: 0, duplicates: 0, restarts: 0 };
    const { logger } = this.config;
    let delay = this.config.retryDelayMs;
    let failure: unknown;
    const where = this.where();
    this.retryWarning = new RetryWarning({
      logger,
      warnAfter: this.config.warnAfterRetries,
      subject: `job '${where.producer}' (source '${where.source}', target '${where.target}')`,
      fields: where,
    });
    // The operator's skip request, read when a message it may cover stopped the job (see
    // `coveringSkipRequest`), and applied by every start of this run from then on.
    let skipRequest: bigint | undefined;
    // A function, not a narrowed property: the signal may abort during any await below.
    const aborted = (): boolean => options.signal?.aborted === true;
    try {
      for (;;) {
        if (aborted()) return counters; // stopped before the start, or during the backoff
        try {
          await new RunLoop(this.loopJob, options, counters, skipRequest).run();
          return counters;
        } catch (error) {
          if (error instanceof ProcessingError && error.skippable && !aborted()) {
            const request = await this.coveringSkipRequest(error);
            if (request !== undefined) {
              skipRequest = request;
              continue; // from the resume point, so the step open before the message is whole
            }
          }
          if (error instanceof SourceDeactivatedError) {
            // Another instance took over: the confirms landed and the source answered (see
            // RunLoop.run). Waiting to be activated again is no failure and no restart.
            if (aborted()) return counters;
            this.reportDeactivated(error);
            continue;
          }
          // Only the library's own errors are retriable; the instanceof types the event.
          if (!(error instanceof StreamWindowsError) || !isRetriable(error) || aborted()) {
            throw error;
          }
          counters.restarts++;
          this.events.emit('restart', { error, delayMs: delay, restarts: counters.restarts });
          logger.warn(
            { ...this.where(), err: error, delayMs: delay, restarts: counters.restarts },
            `resuming from the broker in ${delay} ms after a retriable error`,
          );
          this.retryWarning.retrying(error, delay);
          await sleep(delay, options.signal);
          delay = Math.min(delay * 2, this.config.maxRetryDelayMs);
        }
      }
    } catch (error) {
      failure = error;
      if (error instanceof ProcessingError && this.config.processor.onError === 'stop') {
        failure = await this.recordStop(error);
      }
      throw failure;
    } finally {
      await this.releaseTarget();
      this.events.emit('stopped', { summary: { ...counters }, error: failure });
      if (failure === undefined) logger.info({ ...this.where(), ...counters }, 'job stopped');
      else logger.error({ ...this.where(), ...counters, err: failure }, 'job stopped on an error');
    }
  }

  /**
   * Removes the target's producer from the broker however the run ended, the connection left
   * open: a job built again on it under the same name (a supervisor's restart) declares it
   * anew, which RabbitMQ refuses while this one is declared. A failure is logged, not thrown:
   * the run's outcome is what the caller gets.
   */
  private async releaseTarget(): Promise<void> {
    const { target, logger } = this.config;
    try {
      await target.release?.();
    } catch (error) {
      logger.warn({ ...this.where(), err: error }, "the target's producer was not released");
    }
  }

  /**
   * The operator's skip request for this job (./skip-request.ts) when it covers the message
   * that stopped it: read only then, so that a start asks the source nothing more. A failed
   * read counts as no request (the job stops as it would have without one), with a warning.
   */
  private async coveringSkipRequest(error: ProcessingError): Promise<bigint | undefined> {
    const { source, target, logger } = this.config;
    if (
      source instanceof MergedInputs ||
      source.storedOffset === undefined ||
      !this.skipSupported
    ) {
      return undefined;
    }
    let request: bigint | undefined;
    try {
      request = await source.storedOffset(skipReference(target.stream, target.producer));
    } catch (cause) {
      logger.warn(
        { ...this.where(), offset: String(error.offset), err: cause },
        'the skip request could not be read: the job stops at the message as without one',
      );
      return undefined;
    }
    if (request === undefined || request < error.offset) return undefined;
    logger.info(
      { ...this.where(), offset: String(error.offset), skipRequested: String(request) },
      'resuming to step over the message as the operator asked (stream-windows skip)',
    );
    return request;
  }

  /**
   * Records on the source where a message stopped the job under 'stop', for `stream-windows
   * status` and `skip`, and says how to step over it. Only a stop the error says is skippable
   * is recorded (so `skip` refuses any other), and none of a job writing to a super stream:
   * `skip` names one target stream. Best effort: the stop itself is what the caller gets,
   * naming the skip command when the skip can be asked for.
   */
  private async recordStop(error: ProcessingError): Promise<ProcessingError> {
    const { source, target, logger } = this.config;
    const where = { ...this.where(), offset: String(error.offset), stage: error.stage };
    if (!error.skippable) {
      logger.error(
        where,
        `a ${error.stage} failure stopped the job at offset ${error.offset}: it depends on more ` +
          `than the message alone (the job's state, its whole step or its setup), so it cannot be skipped; fix the job`,
      );
      return error;
    }
    if (source instanceof MergedInputs || !this.skipSupported) {
      logger.error(
        where,
        `message ${error.offset} of '${error.stream}' stopped the job (${error.stage}); ` +
          `'stream-windows skip' does not step over a message for a job ${source instanceof MergedInputs ? 'over several inputs' : 'writing to a super stream'}`,
      );
      return error;
    }
    try {
      await source.storeOffset?.(stopReference(target.stream, target.producer), error.offset);
    } catch (cause) {
      logger.warn({ ...where, err: cause }, 'the offset that stopped the job was not recorded');
    }
    const command = skipCommand(source.stream, target.stream, target.producer, error.offset);
    logger.error(
      where,
      `message ${error.offset} of '${source.stream}' stopped the job (${error.stage}); once it ` +
        `is known to be bad input, '${command}' lets the next start dead-letter it`,
    );
    // The error the caller gets names the command too: the default logger says nothing.
    const { stream, offset, stage, cause, skippable } = error;
    return new ProcessingError(stream, offset, stage, cause, skippable, command);
  }

  /** `stream-windows skip` names one target stream: a super stream's job has none. */
  private get skipSupported(): boolean {
    return this.config.route === undefined;
  }

  private reportDeactivated(error: SourceDeactivatedError): void {
    this.events.emit('deactivated', { stream: error.stream, nextOffset: error.offset });
    this.config.logger.info(
      {
        ...this.where(),
        nextOffset: error.offset === undefined ? undefined : String(error.offset),
      },
      'another instance took over the source; waiting to be activated again',
    );
  }

  /** The fields every log line of this job carries. */
  private where(): { source: string; target: string; producer: string } {
    return {
      source: this.config.source.stream,
      target: this.config.target.stream,
      producer: this.config.target.producer,
    };
  }
}
