import { describe } from '../common/errors.js';

/**
 * An operator's way past a poison message (`stream-windows skip`): a request stored on the
 * job's SOURCE stream with RabbitMQ's server-side offset tracking, under a reference of the
 * job's target and producer name. It touches none of the producer's publishing ids, so it
 * can neither drop a step that is open in the job's memory nor be lost with it: the job reads
 * it at every (re)start and, under `onError('stop')`, dead-letters a message that fails at an
 * offset up to the one it names, through the normal result (see `skipsThrough`).
 */

import type { ProcessingStage } from '../common/errors.js';

/** RabbitMQ ignores a StoreOffset whose reference is longer (measured on 4.0.5: 255 stored, 256 not). */
export const MAX_REFERENCE_BYTES = 255;

/**
 * The offset reference of the skip request of producer `producer` on target `target`: one
 * per job (a JSON array, so that no two pairs of names give the same reference), at most
 * `MAX_REFERENCE_BYTES` for the broker to keep it (`referenceFits`).
 */
export function skipReference(target: string, producer: string): string {
  return `stream-windows skip ${JSON.stringify([target, producer])}`;
}

/** The reference under which a job records the offset of the message that stopped it. */
export function stopReference(target: string, producer: string): string {
  return `stream-windows stop ${JSON.stringify([target, producer])}`;
}

export function referenceFits(reference: string): boolean {
  return Buffer.byteLength(reference, 'utf8') <= MAX_REFERENCE_BYTES;
}

/**
 * The last offset at which a message that fails under 'stop' is dead-lettered instead: the
 * operator's request, and every offset the producer already published past. A message at
 * or below the last publishing id that fails under 'stop' was necessarily stepped over
 * before (a restart of an event-time job re-reads from before it), so it is again, whatever
 * the request says now: a replay decides what the first read decided. -1: none.
 */
export function skipsThrough(
  request: bigint | undefined,
  lastPublishingId: bigint,
  published: boolean,
): bigint {
  const passed = published ? lastPublishingId : -1n;
  return request !== undefined && request > passed ? request : passed;
}

/**
 * The dead letter's error of a message stepped over: the same bytes whichever rule let it
 * pass, so a replayed result is the first one's byte for byte.
 */
export function skippedByOperator(cause: unknown): string {
  return `skipped by operator (stream-windows skip): ${describe(cause)}`;
}

/**
 * Whether a failure at `stage` can be stepped over: one the message alone decides, which
 * the processors put through the error policy (./rejections.ts), as 'dead-letter' does. Not
 * an event-time job's aggregate (it depends on the windows' state, which a restart rebuilds
 * only in part), nor a result, encode or route failure (a whole step's, at its last offset).
 */
export function canSkip(stage: ProcessingStage, eventTime: boolean): boolean {
  if (stage === 'reduce') return !eventTime;
  return stage !== 'result' && stage !== 'encode' && stage !== 'route';
}
