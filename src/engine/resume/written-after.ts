import type { ResultWhere, Source } from '../../ports/ports.js';

/**
 * How much earlier than its source message a result may look by chunk timestamps. Both are
 * broker clock times, the source's chunk stored before the job read it and the result written
 * after: on one node the result's is never earlier unless the clock stepped back; on a cluster
 * the two streams' leaders may be different nodes, whose clocks NTP keeps within milliseconds.
 * A larger skew costs only time (the target searches as without the bound); each second of
 * margin costs a restart a read of what the target stores in a second.
 */
export const CLOCK_SKEW_MARGIN_MS = 5_000;

/**
 * Where the producer's result under `last` can be, for `Target.readResult`: written after
 * source offset `last`'s chunk was stored, less the margin. Asked of the source only when the
 * target calls it (after its own hint gave nothing), at most once. Undefined when the source
 * cannot tell (no `timestampAt`, the offset removed by retention or beyond the end, or the
 * question failed): a bound is a shortcut, and the target's read that follows meets a lasting
 * failure of the broker by itself.
 */
export function writtenAfter(source: Source, last: bigint): ResultWhere {
  let asked: Promise<number | undefined> | undefined;
  const ask = async (): Promise<number | undefined> => {
    try {
      const timestamp = await source.timestampAt?.(last);
      return timestamp === undefined ? undefined : timestamp - CLOCK_SKEW_MARGIN_MS;
    } catch {
      return undefined;
    }
  };
  return source.timestampAt === undefined ? {} : { writtenAfterMs: () => (asked ??= ask()) };
}
