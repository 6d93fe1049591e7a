/*
 * The publishing ids of a step's writes: the resume point a target's broker keeps.
 *
 * A step's result may take several writes (a step of 100,000 outputs does not fit one frame).
 * Each write needs its own publishing id, strictly above every earlier one, the same on every
 * replay, and the last write's id must still say where the job resumes, even for an event-time
 * step of one message that closes 100,000 windows (so an id per source offset cannot do). So
 * the id of write `w` of the step whose last source offset is `offset` is
 *
 *     2^62 + offset × 2^16 + w        (w = 0 .. 65534)
 *     2^62 + offset × 2^16 + 65535    (the step's last write, whatever its index)
 *
 * The broker's last id for the producer then tells, by itself, the last step begun and whether
 * its last write is stored (low 16 bits all ones): a restart that finds a step not whole goes
 * back to the step before it (named in every part, `sw-previous`) and writes the step again,
 * the parts already stored discarded by the broker's deduplication.
 *
 * Bit 62 tells these ids from those of results written before steps could span writes, whose
 * publishing id was the step's last offset itself (always below 2^46 in practice: a stream of
 * 7 · 10^13 messages): such a target is read and resumed as before, and the first step written
 * now takes an id above every earlier one.
 */

/** Bit 62: set on every id of this scheme, never on an offset-as-id of earlier results. */
const SCHEME = 1n << 62n;
const PART_BITS = 16n;
/** The low bits of a step's last write. */
const LAST_PART = (1n << PART_BITS) - 1n;
/** The largest source offset the scheme holds: 2^46 - 1. */
export const MAX_STEP_OFFSET = (1n << (62n - PART_BITS)) - 1n;
/** At most this many writes per step (the last one is the 65,536th id). */
export const MAX_STEP_WRITES = Number(LAST_PART);

/** What a target's publishing id says about the step it was written for. */
export type StepId =
  /** 0: the producer never published (or, written by an earlier version, published offset 0). */
  | { readonly kind: 'none' }
  /** Written by an earlier version: the id is the step's last offset, its one write. */
  | { readonly kind: 'offset'; readonly offset: bigint }
  /** Write `write` of the step whose last offset is `offset`; `last`: the step's last write. */
  | {
      readonly kind: 'write';
      readonly offset: bigint;
      readonly write: number;
      readonly last: boolean;
    };

/** The id of write `write` (0-based) of `writes` of the step whose last offset is `offset`. */
export function writeId(offset: bigint, write: number, writes: number): bigint {
  if (offset < 0n || offset > MAX_STEP_OFFSET) {
    throw new RangeError(`a step's last offset must be 0 to ${MAX_STEP_OFFSET}, got ${offset}`);
  }
  if (!Number.isInteger(write) || write < 0 || write >= writes || writes > MAX_STEP_WRITES) {
    throw new RangeError(
      `write ${write} of ${writes}: a step takes 1 to ${MAX_STEP_WRITES} writes`,
    );
  }
  const low = write === writes - 1 ? LAST_PART : BigInt(write);
  return SCHEME | (offset << PART_BITS) | low;
}

/** The id of a step's last write: the resume point once the step is stored whole. */
export function lastWriteId(offset: bigint): bigint {
  return writeId(offset, 0, 1);
}

/**
 * Where a publishing id's write stands in its producer's order: the step's last offset, and
 * the write's index, 65535 for a step's last write (and for an earlier version's id, the
 * step's only write). Ids and stored messages (`sw-last-offset`, `sw-write-id`) compare by it.
 */
export function writePosition(id: bigint): { readonly offset: bigint; readonly write: number } {
  const step = readStepId(id);
  if (step.kind === 'none') return { offset: 0n, write: MAX_STEP_WRITES };
  if (step.kind === 'offset') return { offset: step.offset, write: MAX_STEP_WRITES };
  return { offset: step.offset, write: step.write };
}

/** Reads a publishing id (`Target.lastPublishingId()`, `sw-previous`). */
export function readStepId(id: bigint): StepId {
  if (id === 0n) return { kind: 'none' };
  if ((id & SCHEME) === 0n) return { kind: 'offset', offset: id };
  const low = id & LAST_PART;
  return {
    kind: 'write',
    offset: (id & ~SCHEME) >> PART_BITS,
    write: Number(low),
    last: low === LAST_PART,
  };
}

/**
 * The last source offset a target's publishing id covers whole: the step's last offset when
 * that step is stored whole, undefined when the id is 0 or names a step not whole (its
 * `sw-previous` tells the step before). For tests and tools comparing ids with offsets.
 */
export function wholeStepOffset(id: bigint): bigint | undefined {
  const step = readStepId(id);
  if (step.kind === 'none') return undefined;
  if (step.kind === 'offset' || step.last) return step.offset;
  return undefined;
}
