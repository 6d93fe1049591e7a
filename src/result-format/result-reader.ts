import { CodecError } from '../codecs/codec-error.js';
import { ConfigError, NotAResultError } from '../common/errors.js';
import type { Source } from '../ports/ports.js';
import { decodeResult, type DecodedResult } from './result-format.js';
import { messageAt } from '../ports/chunk-message.js';

/** The options of `readResults`: where to start, and whether to stop once caught up. */
export interface ReadResultsOptions {
  /**
   * Where to start (default 'first'): an offset (the first result whose first message is at
   * or after it; the remaining parts of a batch begun before it are passed over), 'first'
   * (the first offset the stream still holds) or 'next' (only results written after the
   * read starts: the stream's end offset at the start).
   */
  readonly from?: bigint | 'first' | 'next';
  /** Stop at the stream's end offset taken when the read starts, instead of waiting for more. */
  readonly untilCaughtUp?: boolean;
  /** Ends the iteration cleanly (no error) when aborted. */
  readonly signal?: AbortSignal;
  /**
   * A message that is not a result, or a batch whose parts do not follow each other
   * (default 'error'): 'error' ends the iteration with a NotAResultError naming stream and
   * offset; 'skip' passes over it (a broken batch is dropped whole).
   */
  readonly invalid?: 'error' | 'skip';
}

/** One result of a target stream, whole: a `pack: 'batch'` result's parts are reassembled. */
export interface ReadResult<R = unknown> {
  /** Offset of the result's first message. */
  readonly offset: bigint;
  /** Offset after its last message: `from` to read on after this result. */
  readonly next: bigint;
  /** The result, decoded; a batch result's outputs, late values and dead letters all in it. */
  readonly result: DecodedResult<R>;
}

/**
 * Reads a target stream as results, so a consumer never touches chunks or batch parts. Works
 * on any `Source`: the embedded broker's `broker.source(stream)` or RabbitMQ's
 * `rabbit.source(stream)`. `R` is the job's result type: `readResults<ResultOf<typeof job>>`.
 */
export function readResults<R = unknown>(
  source: Source,
  options: ReadResultsOptions = {},
): AsyncGenerator<ReadResult<R>, void, undefined> {
  const { from = 'first', untilCaughtUp = false, signal, invalid = 'error' } = options;
  // Checked here, where the options are given, not at the first `next()`.
  if (from !== 'first' && from !== 'next' && !(typeof from === 'bigint' && from >= 0n)) {
    throw new ConfigError('from', "must be an offset (a bigint >= 0n), 'first' or 'next'", from);
  }
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
  if (invalid !== 'error' && invalid !== 'skip') {
    throw new ConfigError('invalid', "must be 'error' or 'skip'", invalid);
  }
  return read(source, from, untilCaughtUp, signal, invalid);
}

async function* read<R>(
  source: Source,
  from: bigint | 'first' | 'next',
  untilCaughtUp: boolean,
  signal: AbortSignal | undefined,
  invalid: 'error' | 'skip',
): AsyncGenerator<ReadResult<R>, void, undefined> {
  if (signal?.aborted === true) return;
  const end = untilCaughtUp || from === 'next' ? await source.endOffset() : -1n;
  const start = from === 'next' ? end : from;
  if (untilCaughtUp && (end === 0n || (typeof start === 'bigint' && start >= end))) return;

  const readSignal = signal ?? new AbortController().signal;
  const assembler = new BatchAssembler<R>();
  // Chunks are stored whole, so the end offset falls between chunks. Leaving the loop early
  // returns the source's iterator, which closes its subscription.
  for await (const chunk of source.read(start, readSignal)) {
    for (let index = 0; index < chunk.count; index++) {
      const offset = chunk.firstOffset + BigInt(index);
      let whole: ReadResult<R> | undefined;
      try {
        whole = assembler.add(offset, decodeResult<R>(messageAt(chunk, index)));
      } catch (cause) {
        if (invalid === 'error') throw new NotAResultError(source.stream, offset, cause);
        assembler.drop();
        continue;
      }
      if (whole !== undefined) yield whole;
    }
    if (untilCaughtUp && chunk.firstOffset + BigInt(chunk.count) >= end) return;
  }
}

/**
 * Groups the parts of a `pack: 'batch'` result (messages `sw-part` 0..`sw-parts`-1 with one
 * last offset, consecutive: a batch is stored as one unit) into one result.
 */
class BatchAssembler<R> {
  private parts: DecodedResult<R>[] = [];
  private firstOffset = 0n;
  /** Until the first whole message: parts of a batch begun before `from` are passed over. */
  private started = false;

  add(offset: bigint, result: DecodedResult<R>): ReadResult<R> | undefined {
    const { part } = result;
    if (part === undefined) {
      this.expectNoOpenBatch(result);
      this.started = true;
      return { offset, next: offset + 1n, result };
    }
    if (part.index === 0) {
      this.expectNoOpenBatch(result);
      this.started = true;
      this.firstOffset = offset;
    } else {
      const head = this.parts[0];
      if (head === undefined) {
        if (!this.started) return undefined;
        throw new CodecError(`part ${part.index} of ${part.of} without its part 0`, 0);
      }
      if (
        head.lastOffset !== result.lastOffset ||
        head.part?.of !== part.of ||
        part.index !== this.parts.length
      ) {
        throw new CodecError(
          `part ${part.index} of ${part.of} of the result for source offset ${result.lastOffset} ` +
            `follows part ${this.parts.length - 1} of the result for source offset ${head.lastOffset}`,
          0,
        );
      }
    }
    this.parts.push(result);
    if (this.parts.length < part.of) return undefined;
    const whole = assemble(this.parts);
    this.parts = [];
    return { offset: this.firstOffset, next: offset + 1n, result: whole };
  }

  /** After a skipped message: the batch it broke is dropped whole. */
  drop(): void {
    this.parts = [];
    this.started = true;
  }

  private expectNoOpenBatch(result: DecodedResult<R>): void {
    const head = this.parts[0];
    if (head === undefined) return;
    throw new CodecError(
      `the result for source offset ${result.lastOffset} comes after part ` +
        `${this.parts.length - 1} of ${head.part?.of} of the result for source offset ${head.lastOffset}`,
      0,
    );
  }
}

function assemble<R>(parts: readonly DecodedResult<R>[]): DecodedResult<R> {
  const head = parts[0] as DecodedResult<R>;
  return {
    ...head,
    part: undefined,
    outputs: parts.flatMap((p) => p.outputs),
    late: parts.flatMap((p) => p.late),
    deadLetters: parts.flatMap((p) => p.deadLetters),
  };
}
