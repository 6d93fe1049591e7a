import type { Source, Target } from '../ports/ports.js';
import { settled } from './settled.js';
import { pendingStop } from './skip.js';
import { streamLag, type StreamLag } from './stream-lag.js';

/**
 * Where a job stands: its producer's resume point on the target against the source's end.
 * One stream pair; a super stream's status will be one of these per partition.
 */
export interface JobStatus extends StreamLag {
  /** The source stream. */
  readonly source: string;
  /** The target stream. */
  readonly target: string;
  /** The job's producer name on the target. */
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
 * ports alone: the resume point as the runner computes it, the end offset, and the lag
 * (`streamLag`). A missing stream fails with the port's own error, which names it.
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
  return {
    source: source.stream,
    target: target.stream,
    producer: target.producer,
    lastPublishingId,
    published,
    resumeFrom,
    sourceEnd,
    stoppedAt,
    skipRequested,
    ...(await streamLag(source, resumeFrom, sourceEnd)),
  };
}
