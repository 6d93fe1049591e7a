import type { Source, Target } from '../core/ports.js';
import { firstChunk } from './first-chunk.js';
import { settled } from './settled.js';
import { pendingStop } from './skip.js';

/**
 * Where a job stands: its producer's resume point on the target against the source's end.
 * One stream pair; a super stream's status will be one of these per partition.
 */
export interface JobStatus {
  readonly source: string;
  readonly target: string;
  readonly producer: string;
  /** The producer's last publishing id on the target (0: never published, or offset 0). */
  readonly lastPublishingId: bigint;
  /**
   * Whether the producer ever stored a result on the target: what a last id of 0 leaves open
   * (asked of the target then, `Target.hasPublished`). False for a new job, or a misspelt name.
   */
  readonly published: boolean;
  /** Where the job resumes reading: last + 1 (1 after a result for offset 0), or 'first'. */
  readonly resumeFrom: bigint | 'first';
  /** One past the source's last message (0 for an empty source). */
  readonly sourceEnd: bigint;
  /** Source messages from the resume point to the end: what the job has still to read. */
  readonly lagMessages: bigint;
  /**
   * Broker time between the chunk holding the resume point and the source's last chunk, ms
   * (0 when caught up): how far behind the job is in the source's own clock.
   */
  readonly lagMs: number;
  /** Broker timestamps (epoch ms) of those two chunks; undefined when there is nothing to read. */
  readonly resumeChunkTime: number | undefined;
  readonly lastChunkTime: number | undefined;
  /**
   * The offset of the message that stopped the job (a ProcessingError, recorded on the source
   * by the job) since its last result; undefined when it has published past it, or never stopped.
   */
  readonly stoppedAt: bigint | undefined;
  /** An operator's skip request (`stream-windows skip`) the job has not published past yet. */
  readonly skipRequested: bigint | undefined;
}

/**
 * Asks the broker where the job of `target`'s producer stands on `source`, through the
 * ports alone: the resume point as the runner computes it, the end offset, and the
 * timestamps of two chunks (each read as the first delivery of a read that stops there).
 * A missing stream fails with the port's own error, which names it.
 */
export async function jobStatus(source: Source, target: Target): Promise<JobStatus> {
  const [lastPublishingId, sourceEnd] = await settled(
    target.lastPublishingId(),
    source.endOffset(),
  );
  // A last id of 0 is "never published" or "published offset 0": the target's results tell.
  const published = lastPublishingId > 0n || (await target.hasPublished());
  const resumeFrom: bigint | 'first' = published ? lastPublishingId + 1n : 'first';
  const { stoppedAt, skipRequested } = await pendingStop(
    source,
    target,
    lastPublishingId,
    published,
  );
  const base = {
    source: source.stream,
    target: target.stream,
    producer: target.producer,
    lastPublishingId,
    published,
    resumeFrom,
    sourceEnd,
    stoppedAt,
    skipRequested,
  };
  const caughtUp = sourceEnd === 0n || (resumeFrom !== 'first' && resumeFrom >= sourceEnd);
  if (caughtUp) {
    return {
      ...base,
      lagMessages: 0n,
      lagMs: 0,
      resumeChunkTime: undefined,
      lastChunkTime: undefined,
    };
  }
  // The chunk holding the last message is the last chunk of messages.
  const [resumeChunk, lastChunk] = await settled(
    firstChunk(source, resumeFrom),
    firstChunk(source, sourceEnd - 1n),
  );
  return {
    ...base,
    lagMessages: sourceEnd - resumeChunk.firstOffset,
    lagMs: Math.max(0, lastChunk.timestamp - resumeChunk.timestamp),
    resumeChunkTime: resumeChunk.timestamp,
    lastChunkTime: lastChunk.timestamp,
  };
}
