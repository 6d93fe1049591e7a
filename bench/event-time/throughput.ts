import { decodeResult } from '../../src/result-format/result-decoder.js';
import { MemoryBroker } from '../../src/memory/broker.js';
import { cpuClock, interleavedRounds, median, ratioSpread } from '../measure.js';
import { throughput, type CaseResult } from '../report.js';
import { fillSource, type OpenKeysShape } from './corpus.js';
import { DISORDER_MS, EVENT_TIME_KINDS, jobOf, type JobKind } from './jobs.js';

export const OPEN_KEY_COUNTS = [1, 1_000, 100_000] as const;

/** Results of 100,000 outputs are ~4 MB: the throughput jobs get a broker that takes them. */
export const LARGE_FRAME_MAX = 256 * 1024 * 1024;

/**
 * The source of the throughput cases for `keys` open keys: at least 4 bursts (3 of them
 * closing), each at least `keys` messages so that every key has a window open at its end.
 */
export function throughputShape(messages: number, keys: number): OpenKeysShape {
  const windowMessages = Math.max(keys, Math.ceil(messages / 16));
  return {
    messages: Math.max(messages, 4 * windowMessages),
    keys,
    windowMessages,
    timeline: 'bursts',
    disorderMs: DISORDER_MS,
  };
}

/**
 * Event-time windows through the whole job (Runner, embedded broker, `untilCaughtUp`), with
 * 1, 1,000 and 100,000 keys open at once, against the step tumbling window on the same
 * source in the same rotating rounds. Before timing, the jobs' results are checked: the
 * event-time tumbling window must publish the step window's windows (keys, counts, sums),
 * hopping three times its counts, sessions one per key and burst, and no message late.
 */
export async function eventTimeThroughputCases(
  messages: number,
  repeats: number,
  keyCounts: readonly number[] = OPEN_KEY_COUNTS,
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  const kinds: readonly JobKind[] = ['step-tumbling', ...EVENT_TIME_KINDS];
  for (const keys of keyCounts) {
    const shape = throughputShape(messages, keys);
    const broker = new MemoryBroker({ frameMax: LARGE_FRAME_MAX });
    fillSource(broker, shape);
    let runs = 0;
    /**
     * One run of `kind`'s job to caught up, on a results stream of its own: its wall and CPU
     * milliseconds; with `digests`, what it published is digested into it under `kind`.
     */
    const run = async (
      kind: JobKind,
      digests?: Map<JobKind, WindowsDigest>,
    ): Promise<{ ms: number; cpuMs: number }> => {
      const target = `results-${runs++}`;
      broker.createStream(target);
      const job = jobOf(
        kind,
        broker.source('source'),
        broker.target(target, { producer: 'bench' }),
      );
      const cpu = cpuClock();
      const started = performance.now();
      await job.run({ untilCaughtUp: true });
      const ms = performance.now() - started;
      const cpuMs = cpuClock() - cpu;
      digests?.set(kind, digestOf(broker, target));
      broker.deleteStream(target);
      return { ms, cpuMs };
    };
    const digests = new Map<JobKind, WindowsDigest>();
    for (const kind of kinds) await run(kind, digests);
    checkDigests(keys, shape, digests);

    const cpuMs = new Map<JobKind, number[]>(kinds.map((kind) => [kind, []]));
    const timed = (kind: JobKind) => async (): Promise<number> => {
      const times = await run(kind);
      cpuMs.get(kind)?.push(times.cpuMs);
      return times.ms;
    };
    const rounds = await interleavedRounds(
      Object.fromEntries(kinds.map((kind) => [kind, timed(kind)])) as Record<
        JobKind,
        () => Promise<number>
      >,
      repeats,
    );
    const base = rounds['step-tumbling'];
    for (const kind of kinds) {
      // The warm-up round's CPU time is the first sample: left out like its wall time.
      const cpu = median(cpuMs.get(kind)?.slice(1) ?? []);
      const baseCpu = median(cpuMs.get('step-tumbling')?.slice(1) ?? []);
      const spread = ratioSpread(rounds[kind], base);
      results.push({
        name: `event-time/${kind}/${keys}-open-keys`,
        kind: 'event-time',
        ...throughput(shape.messages, rounds[kind]),
        ratios: kind === 'step-tumbling' ? {} : { stepTumbling: spread.median },
        values:
          kind === 'step-tumbling'
            ? { messages: shape.messages, cpuMs: cpu }
            : {
                messages: shape.messages,
                stepTumblingMin: spread.min,
                stepTumblingMax: spread.max,
                cpuMs: cpu,
                stepTumblingByCpu: baseCpu / cpu,
              },
      });
    }
  }
  return results;
}

/** What a job published: per window start, its keys, messages and sum; and late messages. */
interface WindowsDigest {
  readonly windows: Map<number, { keys: number; count: number; sum: number }>;
  readonly count: number;
  readonly late: number;
}

function digestOf(broker: MemoryBroker, stream: string): WindowsDigest {
  const windows = new Map<number, { keys: number; count: number; sum: number }>();
  let count = 0;
  let late = 0;
  for (const message of broker.messages(stream)) {
    const result = decodeResult<number>(message.bytes);
    late += result.lateCount + result.lateDropped;
    for (const output of result.outputs) {
      const window = windows.get(output.start) ?? { keys: 0, count: 0, sum: 0 };
      window.keys++;
      window.count += output.count;
      window.sum += output.value;
      windows.set(output.start, window);
      count += output.count;
    }
  }
  return { windows, count, late };
}

function checkDigests(
  keys: number,
  shape: OpenKeysShape,
  digests: ReadonlyMap<JobKind, WindowsDigest>,
): void {
  const fail = (why: string): never => {
    throw new Error(`event-time bench, ${keys} keys: ${why}`);
  };
  const step = digests.get('step-tumbling') as WindowsDigest;
  // Every burst but the last closes (no later message moves time past it).
  const bursts = Math.ceil(shape.messages / shape.windowMessages);
  if (step.windows.size !== bursts - 1) fail(`step tumbling closed ${step.windows.size} windows`);
  for (const [kind, digest] of digests) {
    if (digest.late !== 0) fail(`${kind} counted ${digest.late} messages late`);
  }
  // Event-time tumbling, and the hopping windows that start with a burst, hold the step windows.
  for (const kind of ['tumbling', 'hopping'] as const) {
    const digest = digests.get(kind) as WindowsDigest;
    for (const [start, window] of step.windows) {
      const other = digest.windows.get(start);
      if (
        other?.keys !== window.keys ||
        other.count !== window.count ||
        Math.abs(other.sum - window.sum) > 1e-6 * Math.abs(window.sum)
      ) {
        fail(`${kind} published another window at ${start} than step tumbling`);
      }
    }
  }
  if (digests.get('tumbling')?.windows.size !== step.windows.size) {
    fail('event-time tumbling closed other windows than step tumbling');
  }
  const session = digests.get('session') as WindowsDigest;
  const sessions = [...session.windows.values()].reduce((total, w) => total + w.keys, 0);
  if (session.count !== step.count || sessions !== (bursts - 1) * keys) {
    fail(`sessions held ${session.count} messages in ${sessions} sessions`);
  }
}
