import type { SourceChunk } from '../ports/ports.js';
import type { StepResult } from '../result-format/step-result.js';
import type { ResumeAt, ResumeStart } from './resume/resume-point.js';

/**
 * What the runner asks of the synchronous heart of a job, whichever it is: the step processor
 * (contiguous steps), the window operator (event-time windows), or over several inputs the
 * merging processor (./merge/merging-processor.ts). ./processor-factory.ts is the one place
 * that tells them apart.
 */
export interface Processor<R> {
  /**
   * Processes every message of `chunk`; throws ProcessingError under the 'stop' policy.
   * `input`: over several inputs, the index of the one `chunk` comes from.
   */
  process(chunk: SourceChunk, input?: number): void;

  /**
   * Over several inputs: input `input` delivered nothing for `idleAfter`, and is left out of
   * the merge's bound until it delivers again.
   */
  leaveOut?(input: number): void;

  /**
   * Over several inputs: whether input `input` may deliver its next chunk, or waits while it
   * holds `maxBuffered` messages ahead of the others (`MergeOptions.maxBufferedPerInput`).
   */
  mayRead?(input: number, maxBuffered: number): boolean;

  /**
   * Hands over the results decided so far, in order, to be published. `idleFlushMayFollow`: an
   * idle flush may come before the next message, and a result it would have to join (it could
   * go under no other publishing id) stays behind until then.
   */
  takeReady(idleFlushMayFollow: boolean): StepResult<R>[];

  /** Whether an idle flush now would publish anything. */
  readonly canFlush: boolean;

  /** Decides a result now of what is open, marked flushed (`FlushOptions`). */
  flush(): void;

  /**
   * Under 'stop', a message that fails at or below `offset` is dead-lettered as skipped by the
   * operator (./skip-request.ts); set by the runner at every (re)start.
   */
  skipThrough(offset: bigint): void;

  /**
   * Whether a start must read the producer's last result for `resume` (it is read anyway to
   * check the job's definition once the producer published).
   */
  readonly readsLastResult: boolean;

  /**
   * Takes back, at a start, what this processor keeps across results, and says where the
   * source is read from (the rules: ./resume/resume-point.ts).
   */
  resume(start: ResumeStart): Promise<ResumeAt>;
}

/** No offset: a step or result not begun, a message not read. */
export const NO_OFFSET = -1n;

/** The shared empty array of a result without late values or dead letters. */
export const NONE: readonly never[] = Object.freeze([]);
