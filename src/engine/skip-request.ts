import { describe } from '../common/errors.js';
import { trackingReference } from '../common/tracking-reference.js';

/**
 * An operator's way past a poison message (`stream-windows skip`): a request stored on the
 * job's SOURCE stream with RabbitMQ's server-side offset tracking, under a reference of the
 * job's target and producer name. It touches none of the producer's publishing ids, so it
 * can neither drop a step that is open in the job's memory nor be lost with it. The job reads
 * it only when a message it could step over stops it under `onError('stop')` (the
 * ProcessingError's `skippable`): a request that covers that offset restarts the job from its
 * resume point, dead-lettering every message that fails at an offset up to the one it names,
 * through the normal result (see `skipsThrough`).
 */

/**
 * The offset reference of the skip request of producer `producer` on target `target`: one
 * per job (see `trackingReference` for the derivation and its length limit).
 */
export function skipReference(target: string, producer: string): string {
  return trackingReference('skip', target, producer);
}

/**
 * The command an operator runs to step the job of producer `producer` on `target` over
 * message `offset` of `source`: named by the error the job stops with, its log line and
 * `stream-windows status`, all from here.
 */
export function skipCommand(
  source: string,
  target: string,
  producer: string,
  offset: bigint,
): string {
  return (
    `stream-windows skip --source ${shellWord(source)} --target ${shellWord(target)} ` +
    `--producer ${shellWord(producer)} --offset ${offset}`
  );
}

/** `word` as one shell word: quoted only when it holds more than plain name characters. */
function shellWord(word: string): string {
  return /^[\w.:@%+=,/-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The reference under which a job records the offset of the message that stopped it. */
export function stopReference(target: string, producer: string): string {
  return trackingReference('stop', target, producer);
}

/**
 * The last offset at which a message that fails under 'stop' is dead-lettered instead: the
 * operator's request, and every offset the producer already published past. A message at
 * or below the last step's last offset that fails under 'stop' was necessarily stepped over
 * before (a restart of an event-time job re-reads from before it), so it is again, whatever
 * the request says now: a replay decides what the first read decided. `through`: what the
 * producer's results cover (./resume/published-through.ts). -1: none.
 */
export function skipsThrough(request: bigint | undefined, through: bigint): bigint {
  return request !== undefined && request > through ? request : through;
}

/**
 * The dead letter's error of a message stepped over: the same bytes whichever rule let it
 * pass, so a replayed result is the first one's byte for byte.
 */
export function skippedByOperator(cause: unknown): string {
  return `skipped by operator (stream-windows skip): ${describe(cause)}`;
}
