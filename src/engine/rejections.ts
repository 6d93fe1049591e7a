import {
  ConfigError,
  DeadLetterLimitError,
  describe,
  ProcessingError,
  type ProcessingStage,
} from '../common/errors.js';
import type { SourceChunk } from '../ports/ports.js';
import type { DeadLetter } from '../result-format/step-result.js';
import { messageAt } from '../ports/chunk-message.js';
import type { ErrorPolicy } from '../api/policies.js';
import { skippedByOperator } from './skip-request.js';
import type { Key } from '../common/keyed-output.js';
import { NO_OFFSET, NONE } from './processor.js';
import { counted } from '../common/plural.js';

/**
 * The job's error policy applied to a message a stage rejected, shared by both processors:
 * under 'stop' (and for a setup mistake, whatever the policy) a ProcessingError; under
 * 'dead-letter' the message kept whole for the pending result, up to `maxDeadLetters`.
 * Under 'stop', a message at or below `skipsThrough` (an operator's skip request, see
 * ./skip-request.ts) is dead-lettered as skipped instead.
 */
export class Rejections {
  /** Dead letters of the result being built; `take()` hands them over. */
  private letters: DeadLetter[] = [];
  /** Under 'stop', the last offset an operator let the job step over. */
  skipsThrough = NO_OFFSET;

  constructor(
    private readonly stream: string,
    private readonly onError: ErrorPolicy,
    private readonly maxDeadLetters: number,
  ) {}

  /** Keeps message `index` of `chunk` as a dead letter, or throws (see the class). */
  reject(
    chunk: SourceChunk,
    index: number,
    stage: ProcessingStage,
    cause: unknown,
    resultFirstOffset: bigint,
  ): void {
    const offset = chunk.firstOffset + BigInt(index);
    // A setup mistake that shows only when a message runs (an async schema validator) is no
    // message's fault: dead-lettering would bury every message, so it stops the job.
    if (cause instanceof ConfigError) throw new ProcessingError(this.stream, offset, stage, cause);
    let error = describe(cause);
    if (this.onError === 'stop') {
      // The one stop `stream-windows skip` can step over: this message's own failure.
      if (offset > this.skipsThrough) {
        throw new ProcessingError(this.stream, offset, stage, cause, true);
      }
      error = skippedByOperator(cause);
    }
    if (this.letters.length >= this.maxDeadLetters) {
      throw new DeadLetterLimitError(
        this.stream,
        resultFirstOffset,
        offset,
        this.maxDeadLetters,
        stage,
        cause,
      );
    }
    this.letters.push({ offset, stage, error, message: messageAt(chunk, index) });
  }

  /**
   * A key's `result` threw as its result was decided. Under 'stop' the job stops at the
   * result's last offset `lastOffset`; under 'dead-letter' the key's output is replaced by
   * one dead letter there, with an empty message (no single source message failed), naming the
   * key, how many messages it folded and `over` (the step's offsets, or the window).
   */
  resultFailed(lastOffset: bigint, key: Key, count: number, over: string, cause: unknown): void {
    if (this.onError === 'stop') {
      throw new ProcessingError(this.stream, lastOffset, 'result', cause);
    }
    this.letters.push({
      offset: lastOffset,
      stage: 'result',
      error:
        `result failed for key ${key === null ? 'null' : JSON.stringify(key)} over ` +
        `${counted(count, 'message')} of ${over}: ${describe(cause)}`,
      message: NO_MESSAGE,
    });
  }

  /** The pending dead letters, handed over (a shared empty array when none). */
  take(): readonly DeadLetter[] {
    if (this.letters.length === 0) return NONE;
    const letters = this.letters;
    this.letters = [];
    return letters;
  }
}

/** The message of a dead letter that stands for a key's result rather than one message. */
const NO_MESSAGE = new Uint8Array(0);
