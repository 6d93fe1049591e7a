import { ConfigError } from '../common/errors.js';
import type { Source, Target } from '../ports/ports.js';
import { skipReference, stopReference } from '../engine/skip-request.js';
import { firstChunk } from './first-chunk.js';
import { checkResultsSource } from './results-source.js';
import { settled } from './settled.js';
import { readLastWholeStep } from '../engine/resume/last-whole-step.js';
import { publishedThrough } from '../engine/resume/published-through.js';

/** What an operator's skip request (`stream-windows skip`) stored, and where the job stood. */
export interface SkipRequest {
  /** The source stream the request is stored on. */
  readonly source: string;
  /** The job's target stream. */
  readonly target: string;
  /** The job's producer name. */
  readonly producer: string;
  /** The offset the job will dead-letter on its next start, as skipped by the operator. */
  readonly offset: bigint;
  /** The producer's last publishing id on the target (0 when it never published). */
  readonly lastPublishingId: bigint;
}

/**
 * Where a job stopped on a message since its last result, and the skip request waiting for
 * its next start: both undefined once the producer published past them.
 */
export interface PendingStop {
  /** The offset of the message that stopped the job, as the job recorded it on the source. */
  readonly stoppedAt: bigint | undefined;
  /** The offset an operator asked the job to step over on its next start. */
  readonly skipRequested: bigint | undefined;
}

/**
 * The stop and skip request stored on the source for the job of `target`'s producer, kept
 * only while the job has not published past them: above `lastOffset`, its last step's last
 * offset, when it ever `published`.
 */
export async function pendingStop(
  source: Source,
  target: Target,
  lastOffset: bigint,
  published: boolean,
): Promise<PendingStop> {
  const through = publishedThrough(lastOffset, published);
  const ask = async (reference: string): Promise<bigint | undefined> => {
    if (source.storedOffset === undefined) return undefined;
    const offset = await source.storedOffset(reference);
    return offset !== undefined && offset > through ? offset : undefined;
  };
  const [stoppedAt, skipRequested] = await settled(
    ask(stopReference(target.stream, target.producer)),
    ask(skipReference(target.stream, target.producer)),
  );
  return { stoppedAt, skipRequested };
}

/**
 * Asks the job of `target`'s producer to step over the message at `offset` of `source` on its
 * next start (see ../engine/skip-request.ts). Nothing of the producer's is written: the request
 * is an offset stored on the source. Refused (a ConfigError naming the rule) unless `offset`
 * is the message the job last stopped at, since its last result: any other message might be
 * one nobody looked at, and one at or below the last publishing id is passed already. The
 * source must still hold it.
 */
export async function requestSkip(
  source: Source,
  target: Target,
  offset: bigint,
): Promise<SkipRequest> {
  const reference = skipReference(target.stream, target.producer);
  if (source.storeOffset === undefined) {
    throw new ConfigError(
      'source',
      'must keep stored offsets to hold a skip request',
      source.stream,
    );
  }
  const [sourceEnd, step] = await settled(
    source.endOffset(),
    readLastWholeStep(target, () => target.hasPublished()),
  );
  await checkResultsSource(source, target, step.id);
  const { lastPublishingId, offset: lastOffset } = step;
  if (offset >= sourceEnd) {
    throw new ConfigError(
      'offset',
      `must be a message of '${source.stream}', whose end is ${sourceEnd}`,
      offset,
    );
  }
  const published = await step.published();
  if (offset <= publishedThrough(lastOffset, published)) {
    throw new ConfigError(
      'offset',
      `must be above the last offset ${lastOffset} that producer '${target.producer}' published on '${target.stream}': the job is past it already`,
      offset,
    );
  }
  const { stoppedAt } = await pendingStop(source, target, lastOffset, published);
  if (stoppedAt !== offset) {
    const where =
      stoppedAt === undefined
        ? 'the job has not stopped at a message it can step over since its last result'
        : `the job last stopped at offset ${stoppedAt}`;
    throw new ConfigError('offset', `must be the message the job stopped at: ${where}`, offset);
  }
  // Fails with a RetentionGapError when retention removed it.
  await firstChunk(source, offset);
  await source.storeOffset(reference, offset);
  return {
    source: source.stream,
    target: target.stream,
    producer: target.producer,
    offset,
    lastPublishingId,
  };
}
