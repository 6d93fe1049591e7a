import { CodecError } from '../codecs/codec-error.js';
import { ConfigError, NotAResultError } from '../common/errors.js';
import type { Source } from '../ports/ports.js';
import { decodeResult, joinOpenCountSlices } from './result-decoder.js';
import { type DecodedResult } from './result-format.js';
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
  /** Offset after its last message: `from` to read on after this result, with one producer. */
  readonly next: bigint;
  /**
   * `from` to read on after this result without missing one when several producers write the
   * target: `next`, or, while another producer's step begun before it is not whole yet, that
   * step's first message. Reading on from there gives the results after it again: skip those
   * already seen by their producer and last offset.
   */
  readonly resumeFrom: bigint;
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
 * Groups a step's parts (messages `sw-part` 0..`sw-parts`-1 with one last offset: a 'batch'
 * step's, or any step's that took several writes) into one result. One producer's parts
 * follow each other; another producer's writes may come between them (several producers on
 * one target), so parts are gathered per producer.
 */
class BatchAssembler<R> {
  private readonly open = new Map<string, OpenStep<R>>();
  /** Producers seen whole since the read began: their parts begun before `from` are passed. */
  private readonly started = new Set<string>();

  add(offset: bigint, result: DecodedResult<R>): ReadResult<R> | undefined {
    const { part, producer } = result;
    const step = this.open.get(producer);
    if (part === undefined) {
      expectNoOpenStep(step, result);
      this.started.add(producer);
      return this.whole(offset, offset + 1n, result);
    }
    if (part.index === 0) {
      expectNoOpenStep(step, result);
      this.started.add(producer);
      if (part.of === 1) return this.whole(offset, offset + 1n, assemble([result]));
      this.open.set(producer, { firstOffset: offset, parts: [result] });
      return undefined;
    }
    if (step === undefined) {
      if (!this.started.has(producer)) return undefined;
      throw new CodecError(`part ${part.index} of ${part.of} without its part 0`, 0);
    }
    const head = step.parts[0] as DecodedResult<R>;
    if (
      head.lastOffset !== result.lastOffset ||
      head.part?.of !== part.of ||
      part.index !== step.parts.length
    ) {
      throw new CodecError(
        `part ${part.index} of ${part.of} of the result for source offset ${result.lastOffset} ` +
          `follows part ${step.parts.length - 1} of the result for source offset ${head.lastOffset}`,
        0,
      );
    }
    step.parts.push(result);
    if (step.parts.length < part.of) return undefined;
    this.open.delete(producer);
    return this.whole(step.firstOffset, offset + 1n, assemble(step.parts));
  }

  /** A whole result, and where to read on: `next`, or an earlier step still open's first. */
  private whole(offset: bigint, next: bigint, result: DecodedResult<R>): ReadResult<R> {
    let resumeFrom = next;
    for (const { firstOffset } of this.open.values()) {
      if (firstOffset < resumeFrom) resumeFrom = firstOffset;
    }
    return { offset, next, resumeFrom, result };
  }

  /** After a skipped message: the steps it may have broken are dropped whole. */
  drop(): void {
    for (const producer of this.open.keys()) this.started.add(producer);
    this.open.clear();
  }
}

/** A step whose first parts were read. */
interface OpenStep<R> {
  readonly firstOffset: bigint;
  readonly parts: DecodedResult<R>[];
}

function expectNoOpenStep<R>(step: OpenStep<R> | undefined, result: DecodedResult<R>): void {
  const head = step?.parts[0];
  if (step === undefined || head === undefined) return;
  throw new CodecError(
    `the result for source offset ${result.lastOffset} comes after part ` +
      `${step.parts.length - 1} of ${head.part?.of} of the result for source offset ${head.lastOffset}`,
    0,
  );
}

function assemble<R>(parts: readonly DecodedResult<R>[]): DecodedResult<R> {
  const { openCountSlices: _slices, ...head } = parts[0] as DecodedResult<R>;
  return {
    ...head,
    part: undefined,
    outputs: parts.flatMap((p) => p.outputs),
    late: parts.flatMap((p) => p.late),
    deadLetters: parts.flatMap((p) => p.deadLetters),
    recovery: recoveryOf(parts),
  };
}

/**
 * The step's recovery state: its head's, with the open counts joined from the slices its
 * writes carry, in order, when it wrote them in slices (`DecodedResult.openCountSlices`).
 */
function recoveryOf(parts: readonly DecodedResult[]): DecodedResult['recovery'] {
  const head = parts[0] as DecodedResult;
  const count = head.openCountSlices?.count;
  if (count === undefined) return head.recovery;
  const texts: string[] = [];
  for (const part of parts) {
    const slice = part.openCountSlices?.slice;
    if (slice === undefined) continue;
    if (slice.index !== texts.length) {
      throw new CodecError(
        `slice ${slice.index} of ${count} of the open counts of the result for source offset ${head.lastOffset} comes after ${texts.length}`,
        0,
      );
    }
    texts.push(slice.text);
  }
  if (texts.length !== count || head.recovery === undefined) {
    throw new CodecError(
      `the result for source offset ${head.lastOffset} holds ${texts.length} of the ${count} slices of its open counts${head.recovery === undefined ? ', and no recovery state' : ''}`,
      0,
    );
  }
  return { ...head.recovery, openCounts: joinOpenCountSlices(texts) };
}
