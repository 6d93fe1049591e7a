import { connect, type RabbitMQ } from '../src/rabbitmq/index.js';
import {
  lookUpResult,
  windowsReaching,
  type ResultLookup,
} from '../src/rabbitmq/write/result-lookup.js';
import {
  othersResults,
  producerTargets,
  publishResults,
  resultMessages,
  type ResultWrite,
} from '../test/support/results/stored-results.js';
import { interleavedRounds, median, ratioSpread } from './measure.js';
import { ratioRange, throughput, type CaseResult } from './report.js';

/** Results of other producers stored after ours, one target stream each. */
export const LOOKUP_DISTANCES = [0, 1_000, 10_000, 100_000] as const;

const OURS = 'ours';
const OTHERS = ['billing', 'audit'];
const OUR_ID = 10_000_000n;
const PUBLISH_BATCH = 5_000;
const TIMEOUT_MS = 30_000;

/**
 * `Target.readResult` on the real broker: the time to find our producer's result when
 * `distance` results of two other producers were stored after it (what a restarting job
 * pays when other jobs share its target). Ours sits behind as much history as the window
 * that reaches it holds, so that window is read from its start as on a long-lived target
 * stream, not cut short by the stream's head. Medians of
 * `repeats` rounds after a warm-up, the streams taken in rotating order each round;
 * ratios: lookups per second over distance 0's (ours the last message), in the same rounds;
 * msgs/s: messages the search read per second. `values`: the median, min and max ms, the
 * messages the search read and the windows it took.
 */
export async function resultLookupCases(
  url: string,
  repeats: number,
  distances: readonly number[] = LOOKUP_DISTANCES,
): Promise<CaseResult[]> {
  const rabbit = await connect(url);
  const streams: string[] = [];
  try {
    for (const distance of distances) {
      const stream = `bench-lookup-${distance}-${process.pid}`;
      await rabbit.createStream(stream);
      streams.push(stream);
      await fill(rabbit, stream, historyBefore(distance), distance);
    }
    const ours = Buffer.from(resultMessages(OURS, OUR_ID)[0] as Uint8Array);
    const found = new Map<number, ResultLookup>();
    const tasks = Object.fromEntries(
      distances.map((distance, i) => [
        String(distance),
        async () => {
          const started = performance.now();
          const lookup = await lookUpResult(
            rabbit.params,
            streams[i] as string,
            OURS,
            OUR_ID,
            TIMEOUT_MS,
          );
          const ms = performance.now() - started;
          if (lookup.message === undefined || !ours.equals(lookup.message)) {
            throw new Error(`result lookup bench: our result not found at distance ${distance}`);
          }
          found.set(distance, lookup);
          return ms;
        },
      ]),
    );
    const rounds = await interleavedRounds(tasks, repeats);
    const baseline = rounds[String(distances[0])] ?? [];
    const ratio = `distance-${distances[0]}`;
    return distances.map((distance) => {
      const times = rounds[String(distance)] ?? [];
      const ms = median(times);
      const lookup = found.get(distance);
      const spread = ratioSpread(times, baseline);
      return {
        name: `result-lookup/${distance}-after`,
        kind: 'lookup',
        ...throughput(lookup?.messagesRead ?? 0, times),
        ratios: { [ratio]: spread.median },
        values: {
          ...ratioRange(ratio, spread),
          ms,
          minMs: Math.min(...times),
          maxMs: Math.max(...times),
          messagesRead: lookup?.messagesRead ?? Number.NaN,
          windows: lookup?.windows ?? Number.NaN,
        },
      };
    });
  } finally {
    for (const stream of streams) await rabbit.deleteStream(stream).catch(() => undefined);
    await rabbit.close();
  }
}

/**
 * Other producers' results to store before ours: the rest of the window holding it, which
 * the search reads from its start.
 */
function historyBefore(distance: number): number {
  return windowsReaching(distance + 1).reach - (distance + 1);
}

/**
 * `before` other results, ours, then `after` other results, in batches each confirmed before
 * the next is sent: ours lands exactly between the two (within a batch, writes of different
 * producers may land in another order, each target declaring its producer first).
 */
async function fill(rabbit: RabbitMQ, stream: string, before: number, after: number) {
  const phases: ResultWrite[][] = [
    othersResults(OTHERS, before, 0n),
    [{ producer: OURS, id: OUR_ID }],
    othersResults(OTHERS, after, BigInt(before)),
  ];
  const { targetOf, close } = producerTargets(rabbit, stream);
  try {
    for (const writes of phases) {
      for (let at = 0; at < writes.length; at += PUBLISH_BATCH) {
        await publishResults(writes.slice(at, at + PUBLISH_BATCH), targetOf);
      }
    }
  } finally {
    await close();
  }
}
