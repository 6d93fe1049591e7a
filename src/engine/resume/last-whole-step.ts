import { RecoveryError } from '../../common/errors.js';
import { CodecError } from '../../codecs/codec-error.js';
import type { Target } from '../../ports/ports.js';
import { readStepId } from '../../result-format/publishing-id.js';
import { decodeResultHeader } from '../../result-format/result-decoder.js';

/** The producer's last step stored whole, as the broker's last publishing id tells. */
export interface LastWholeStep {
  /** The broker's last publishing id for the producer, as it answered. */
  readonly lastPublishingId: bigint;
  /**
   * The id of the last write of the last step stored whole (`lastPublishingId` itself, unless
   * that names a step not whole: then the id its parts name as the one before), 0 when none.
   */
  readonly id: bigint;
  /** That step's last source offset (0 when none: see `published`). */
  readonly offset: bigint;
  /**
   * Whether a step was stored whole: known from the id (its scheme, ../../result-format/
   * publishing-id.ts), except for 0 from a target written before it ("never" or "offset 0"),
   * which only a scan of the target answers.
   */
  readonly published: () => Promise<boolean>;
}

/**
 * Reads the producer's last publishing id, and, when it names a write of a step not stored
 * whole (a crash between its writes), the step's stored part under it for the id before the
 * step: a restart writes that step again, whole. A part that cannot be found or read stops
 * the job (RecoveryError): going on from the step itself would leave its missing parts out.
 * `hasPublished` is the target's scan, asked only when the id cannot tell.
 */
export async function readLastWholeStep(
  target: Target,
  hasPublished: () => Promise<boolean>,
): Promise<LastWholeStep> {
  const lastPublishingId = await target.lastPublishingId();
  const named = readStepId(lastPublishingId);
  const id =
    named.kind === 'write' && !named.last
      ? await idBeforeStep(target, lastPublishingId)
      : lastPublishingId;
  const step = readStepId(id);
  return {
    lastPublishingId,
    id,
    offset: step.kind === 'none' ? 0n : step.offset,
    published:
      // A step not whole says whether any came before it: its scan would find its own parts.
      step.kind === 'write' || id !== lastPublishingId
        ? () => Promise.resolve(step.kind !== 'none')
        : step.kind === 'offset'
          ? () => Promise.resolve(true)
          : hasPublished,
  };
}

async function idBeforeStep(target: Target, partId: bigint): Promise<bigint> {
  const fail = (reason: string): RecoveryError =>
    new RecoveryError(target.stream, target.producer, partId, reason);
  const bytes = await target.readResult(partId);
  if (bytes === undefined) {
    throw fail(
      'it names a step not stored whole, and the target holds no part of it under that id (removed by retention, or the name was used by another job)',
    );
  }
  try {
    return decodeResultHeader(bytes).previous ?? 0n;
  } catch (cause) {
    if (!(cause instanceof CodecError)) throw cause;
    throw fail(`it names a step not stored whole, whose part cannot be read: ${cause.message}`);
  }
}
