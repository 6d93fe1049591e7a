import type { Logger } from '../../common/logger.js';
import { RecoveryError } from '../../common/errors.js';
import type { Source, Target } from '../../ports/ports.js';
import type { Processor } from '../processor.js';
import { checkDefinition, type JobDefinitionCheck } from './definition-check.js';
import { FormerProducerCheck } from './former-producer.js';
import { readLastResult, withOpenCounts, type LastResult } from './last-result.js';
import { readLastWholeStep } from './last-whole-step.js';
import { writtenAfter } from './written-after.js';
import { MergedInputs } from '../merge/merged-inputs.js';

/*
 * Where a job resumes: the product's central promise, in one place. The rules, as a start
 * applies them:
 *
 * 1. The resume point is read when the source may deliver (for a single active consumer, at
 *    its activation, maybe long after the start), so that what another instance published
 *    until then is where this one goes on.
 * 2. The broker's last publishing id for the producer names the last step written, by its last
 *    source offset (`last`), and whether it is stored whole (src/result-format/publishing-id.ts).
 *    A step not whole (a crash between its writes) is written again: the start goes on from
 *    the step before it, which its parts name (./last-whole-step.ts). The source is read from
 *    `last + 1`.
 * 3. No step stored (a last id of 0) reads the source from 'first' (the first offset still
 *    stored). A target written before steps could span writes has the step's offset as its
 *    id, so there 0 means "never published" or "published offset 0": re-publishing offset 0
 *    is then skipped as a duplicate. With no step stored, a former producer name that did
 *    publish stops the job (ProducerRenamedError): it would read the source again and publish
 *    every result twice.
 * 4. The producer's last result (the one under `last`) is read once per start when the
 *    processor needs it, or to check the job's definition when `last` is above 0: a result of
 *    another definition stops the job, unless the change was asked for.
 * 5. Event-time windows (the window operator) resume at the offset their last result's
 *    recovery state names (the first offset a window still open then needs), with the
 *    watermark, last flush and per-key counts it records (a step of several writes records
 *    those counts once, in slices on its first writes: each is read under its write's id, and
 *    one missing stops the job, a RecoveryError naming that id); the offsets up to `last` are
 *    read again only to rebuild those windows, publishing nothing. No result under a last id above 0,
 *    or one without recovery state, stops the job (RecoveryError); none under 0: never
 *    published, from 'first'. Over several inputs (`mergeInputs`) offsets are merged positions:
 *    the recovery state also carries the merge's record at its offset (`merge`), the merge is
 *    rebuilt from it and every input read again from the record's `from` for it, its items
 *    released before the record skipped; the positions up to `last` come out item for item as
 *    they did, and rebuild the windows and the merge publishing nothing. A result without a
 *    record of as many inputs stops the job (RecoveryError); none under 0: every input from
 *    'first'.
 * 6. A step job that flushes reopens the window its last result flushed (a readable result of
 *    the same window), so that the next step says it continues it; a missing or unreadable
 *    result costs only that mark (a warning). A flushed step of offset 0 alone is no step a read
 *    from 'first' makes again: with a last id of 0 it resumes at 1 when the producer published.
 * 7. Retention at the head: a step job reading from 'first' (last id 0) whose first chunk
 *    starts above 1, while the producer did publish (offset 0), must resume at 1: the source is
 *    read again from 1, so that it reports the removed offsets rather than skip them. An
 *    event-time job never: it reads from where its last result says.
 * 8. Whether the producer ever published is a scan of the whole target on RabbitMQ: asked at
 *    most once per start, by the first rule that needs it (all before this start publishes, so
 *    one answer serves them all).

 *
 * The target finds the producer's result under an id, and whether it ever published, by the
 * properties every result carries (the adapters' `readResult` and `hasPublished`, over
 * src/result-format/stored-result.ts). `readResult` starts where the target's hint says the
 * producer's latest result lies (src/rabbitmq/write/result-hint.ts; the embedded broker's log),
 * or else, asking when the result was written at the earliest (./written-after.ts: the chunk
 * timestamp of source offset `last`, less a margin for clock skew), reads on from there; it
 * checks what it finds: neither decides anything but how long rule 4 takes.
 */

/** What a start found on the broker, handed to `Processor.resume` (rules 5 and 6). */
export interface ResumeStart {
  /** The last offset of the producer's last step stored whole; 0 when none (see `lastId`). */
  readonly last: bigint;
  /** The publishing id of that step's last write; 0 when no step is stored whole. */
  readonly lastId: bigint;
  /** The producer's result under `last`, when read (rule 4); undefined when not. */
  readonly lastResult: LastResult | undefined;
  /** Whether the producer ever published (rule 8). */
  readonly hasPublished: () => Promise<boolean>;
  /** A RecoveryError naming the target, the producer, `last` and `reason`. */
  recoveryError(reason: string): RecoveryError;
  /** Logs a warning about the producer's last result. */
  warn(message: string): void;
}

/** Where a processor resumes, as `Processor.resume` says. */
export interface ResumeAt {
  readonly from: bigint | 'first';
  /** Whether the producer ever published, when the processor found out; undefined if not asked. */
  readonly published: boolean | undefined;
  /** Whether a read from 'first' past a removed head resumes at 1 instead (rule 7). */
  readonly atOneAfterRetention: boolean;
  /**
   * Over several inputs (`from` is then a merged position): where each input is read from, in
   * the inputs' order (rule 5).
   */
  readonly inputs?: readonly (bigint | 'first')[];
}

/** A start's resume point: the producer's last step and where the processor resumes. */
export interface FoundStart extends ResumeAt {
  /** The broker's last publishing id for the producer, as it answered. */
  readonly lastPublishingId: bigint;
  readonly last: bigint;
  readonly lastId: bigint;
  /** Whether the producer stored a step before: asked of the target only if the id cannot tell. */
  readonly hasPublished: () => Promise<boolean>;
}

export interface ResumePointConfig {
  /**
   * The job's source: when its message `last` was stored bounds where rule 4's result lies
   * (several merged inputs give no bound: `last` is then a merged position).
   */
  readonly source: Source | MergedInputs;
  readonly target: Target;
  readonly logger: Logger;
  /** The fields every log line of the job carries. */
  readonly where: () => Record<string, unknown>;
  readonly definition: JobDefinitionCheck | undefined;
  /** A partitioned job's earlier producer name (rule 3); undefined: not checked. */
  readonly formerProducer: string | undefined;
}

/** Reads a start's resume point by the rules above; one per loop, across its restarts. */
export class ResumePoint {
  private readonly formerProducer: FormerProducerCheck;

  constructor(private readonly config: ResumePointConfig) {
    this.formerProducer = new FormerProducerCheck(config);
  }

  /**
   * What the broker tells a start, read in this order: the producer's last publishing id; when
   * 0, whether the producer was renamed (rule 3); its last result with its definition checked
   * (rule 4); then where the processor resumes (rules 2, 5, 6).
   */
  async read(
    processor: Processor<unknown>,
    hasPublished: () => Promise<boolean>,
  ): Promise<FoundStart> {
    const { source, target, definition, logger } = this.config;
    const step = await readLastWholeStep(target, hasPublished);
    const { offset: last, id: lastId } = step;
    if (lastId === 0n) await this.formerProducer.check(step.published);
    const needed = processor.readsLastResult || (definition !== undefined && lastId !== 0n);
    const where = source instanceof MergedInputs ? {} : writtenAfter(source, last);
    let lastResult = needed ? await readLastResult(target, lastId, where) : undefined;
    if (lastResult?.kind === 'read') {
      checkDefinition(this.config, lastResult.header.definition, lastId);
      // Rule 5: open counts too large for every message of their step are in its writes.
      if (processor.readsLastResult && lastResult.header.openCountSlices !== undefined) {
        const header = await withOpenCounts(target, lastId, lastResult.header, where);
        lastResult = { kind: 'read', header };
      }
    }
    const at = await processor.resume({
      last,
      lastId,
      lastResult,
      hasPublished: step.published,
      recoveryError: (reason) => new RecoveryError(target.stream, target.producer, lastId, reason),
      warn: (message) =>
        logger.warn({ ...this.config.where(), lastPublishingId: String(lastId) }, message),
    });
    return {
      lastPublishingId: step.lastPublishingId,
      last,
      lastId,
      hasPublished: step.published,
      ...at,
    };
  }
}

/** Rule 2 and 3: `last + 1`, or 'first' when no step is stored (a last id of 0). */
export function afterLast(start: Pick<ResumeStart, 'last' | 'lastId'>): bigint | 'first' {
  return start.lastId !== 0n ? start.last + 1n : 'first';
}

/**
 * Rule 3, asked of each result a start publishes: whether it is the step of offset 0 that an
 * earlier version stored under id 0 (ids were offsets then), on a start that found no step
 * stored. The broker would store it again under this scheme's id, above 0: it is counted as a
 * duplicate and not published. `zeroStored` answers, once a start, `stepZeroStored`.
 */
export async function isStoredStepZero(
  start: FoundStart,
  lastOffset: bigint,
  zeroStored: (start: FoundStart) => Promise<boolean>,
): Promise<boolean> {
  return lastOffset === 0n && start.lastId === 0n && (await zeroStored(start));
}

/**
 * Rule 3's question: whether the producer stored a step under id 0, from what the processor
 * found out, or else the target's scan (rule 8).
 */
export function stepZeroStored(start: FoundStart): Promise<boolean> {
  return start.published === undefined ? start.hasPublished() : Promise.resolve(start.published);
}

/**
 * Rule 7, asked of the first chunk a read from the resume point delivers: whether the job must
 * read from 1 instead.
 */
export async function resumesAtOne(
  start: FoundStart,
  firstOffset: bigint,
  hasPublished: () => Promise<boolean>,
): Promise<boolean> {
  return (
    start.atOneAfterRetention && start.lastId === 0n && firstOffset > 1n && (await hasPublished())
  );
}
