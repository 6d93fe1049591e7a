import type { Source, Target } from '../ports/ports.js';
import { settled } from './settled.js';
import { readLastWholeStep } from '../engine/resume/last-whole-step.js';
import { nextUnpublished, publishedThrough } from '../engine/resume/published-through.js';
import { checkResultsSource } from './results-source.js';
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
  /** The producer's last publishing id on the target, as the broker answers (0: none). */
  readonly lastPublishingId: bigint;
  /**
   * The last source offset of the producer's last step stored whole (a step not whole, cut by
   * a crash between its writes, is written again from the step before it); 0 when none.
   */
  readonly lastOffset: bigint;
  /**
   * Whether the producer ever stored a whole step on the target (for a target written by an
   * earlier version, whose id 0 also meant offset 0, asked of the target, `Target.hasPublished`).
   * False for a new job, or a misspelt name.
   */
  readonly published: boolean;
  /** Where the job resumes reading: last offset + 1, or 'first'. */
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
 * (`streamLag`). A missing stream fails with the port's own error, which names it; a source
 * the producer's last result was not read from (a job over several inputs on any of them) is
 * a ConfigError naming the one it was.
 */
export async function jobStatus(source: Source, target: Target): Promise<JobStatus> {
  const [step, sourceEnd] = await settled(
    readLastWholeStep(target, () => target.hasPublished()),
    source.endOffset(),
  );
  await checkResultsSource(source, target, step.id);
  const published = await step.published();
  const lastOffset = step.offset;
  const resumeFrom = nextUnpublished(publishedThrough(lastOffset, published));
  const { stoppedAt, skipRequested } = await pendingStop(source, target, lastOffset, published);
  return {
    source: source.stream,
    target: target.stream,
    producer: target.producer,
    lastPublishingId: step.lastPublishingId,
    lastOffset,
    published,
    resumeFrom,
    sourceEnd,
    stoppedAt,
    skipRequested,
    ...(await streamLag(source, resumeFrom, sourceEnd)),
  };
}
