/**
 * A job over several inputs (issue 30, item 6), on the embedded broker:
 * - `merge/4-inputs-vs-1`: the same messages in 4 input streams (round robin, so their event
 *   times interleave and the merge does real work) against one stream, the same windows
 *   checked equal first: CPU per message, and the restart of each (a second run to caught up
 *   from its last result, which re-reads its open windows; over 4 inputs, every input from
 *   the merge record).
 * - `merge/skew`: two inputs read at the same pace, one 10 s of event time behind the
 *   other: the messages the input ahead holds in the merge at the most, with the default
 *   `maxBufferedPerInput`, with 1,000, and with no bound to speak of (1e9). Counted in
 *   messages: heapUsed sampled during the run is mostly garbage (36 MB with the default bound,
 *   33 MB with 1,000, 37 MB without, in one run), so it says nothing of what is held.
 */
import {
  aggregate,
  decodeResult,
  jsonMessage,
  mergeInputs,
  type MergeOptions,
  type PipelineBuilder,
} from '../src/index.js';
import { MemoryBroker } from '../src/memory/index.js';
import { CHUNK_MESSAGES } from './corpus.js';
import { cpuClock, interleavedRounds, median, ratioSpread, spreadOf } from './measure.js';
import { ratioRange, throughput, type CaseResult } from './report.js';

interface Reading {
  readonly sensor: string;
  readonly at: number;
  readonly value: number;
}

const INPUTS = 4;
const KEYS = 100;
/** Event time between two messages of the merged sequence: 5 a millisecond. */
const PER_MS = 5;
/** The skew of the second case: 10 s of event time, 50,000 messages. */
const SKEW_MS = 10_000;
const LARGE_FRAME_MAX = 64 * 1024 * 1024;

const reading = (i: number, shiftMs = 0): Reading => ({
  sensor: `sensor-${(i * 7919) % KEYS}`,
  at: Math.floor(i / PER_MS) + shiftMs,
  value: (i % 1000) / 10,
});

/** Appends `count` messages made by `make` to `stream`, a chunk of CHUNK_MESSAGES per append. */
function fill(
  broker: MemoryBroker,
  stream: string,
  count: number,
  make: (n: number) => Reading,
): void {
  broker.createStream(stream);
  for (let n = 0; n < count; n += CHUNK_MESSAGES) {
    const size = Math.min(CHUNK_MESSAGES, count - n);
    broker.append(
      stream,
      Array.from({ length: size }, (_, j) => jsonMessage(make(n + j))),
    );
  }
}

/** The sum per sensor and second of `readings` (one input, or several merged). */
function totalsJob(readings: PipelineBuilder<Reading>, broker: MemoryBroker, target: string) {
  return readings
    .eventTime((r) => r.at)
    .key((r) => r.sensor)
    .tumbling(1_000, { grace: 0 })
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target(target, { producer: 'bench' }));
}

/** Per window start and key: the messages and the sum published. */
function digestOf(broker: MemoryBroker, stream: string): Map<string, string> {
  const digest = new Map<string, string>();
  for (const message of broker.messages(stream)) {
    for (const output of decodeResult<number>(message.bytes).outputs) {
      digest.set(
        `${output.start}/${String(output.key)}`,
        `${output.count}:${output.value.toFixed(1)}`,
      );
    }
  }
  return digest;
}

/** `skewMs`: the second case's skew (10 s; the smoke test's is shorter). */
export async function mergeCases(
  messages: number,
  repeats: number,
  skewMs = SKEW_MS,
): Promise<CaseResult[]> {
  return [...(await inputsCases(messages, repeats)), ...(await skewCases(messages, skewMs))];
}

async function inputsCases(messages: number, repeats: number): Promise<CaseResult[]> {
  const broker = new MemoryBroker({ frameMax: LARGE_FRAME_MAX });
  fill(broker, 'one', messages, (i) => reading(i));
  for (let k = 0; k < INPUTS; k++) {
    const count = Math.ceil((messages - k) / INPUTS);
    fill(broker, `in-${k}`, count, (n) => reading(n * INPUTS + k));
  }
  const sources = {
    one: () => aggregate<Reading>(broker.source('one')),
    four: () =>
      aggregate<Reading>(
        mergeInputs(
          Array.from({ length: INPUTS }, (_, k) => broker.source(`in-${k}`)),
          { idleAfter: 'never' },
        ),
      ),
  };
  let runs = 0;
  const run = async (side: keyof typeof sources) => {
    const target = `results-${runs++}`;
    broker.createStream(target);
    const cpu = cpuClock();
    const started = performance.now();
    await totalsJob(sources[side](), broker, target).run({ untilCaughtUp: true });
    const first = { ms: performance.now() - started, cpuMs: cpuClock() - cpu };
    // The restart: nothing new, its open windows read again from the last result's offset.
    const restarted = performance.now();
    await totalsJob(sources[side](), broker, target).run({ untilCaughtUp: true });
    const restartMs = performance.now() - restarted;
    return { target, ...first, restartMs };
  };
  const one = await run('one');
  const four = await run('four');
  const expected = digestOf(broker, one.target);
  const got = digestOf(broker, four.target);
  if (expected.size < 10 || got.size !== expected.size) {
    throw new Error(`merge bench: ${got.size} windows over 4 inputs, ${expected.size} over one`);
  }
  for (const [window, figures] of expected) {
    if (got.get(window) !== figures) throw new Error(`merge bench: window ${window} differs`);
  }
  for (const side of [one, four]) broker.deleteStream(side.target);

  const cost = { one: [] as number[], four: [] as number[] };
  const restart = { one: [] as number[], four: [] as number[] };
  const rounds = await interleavedRounds(
    Object.fromEntries(
      (['one', 'four'] as const).map((side) => [
        side,
        async () => {
          const times = await run(side);
          broker.deleteStream(times.target);
          cost[side].push(times.cpuMs);
          restart[side].push(times.restartMs);
          return times.ms;
        },
      ]),
    ) as Record<'one' | 'four', () => Promise<number>>,
    repeats,
  );
  // The warm-up round's figures are the first samples: left out like its wall time.
  const cpuOne = cost.one.slice(1);
  const cpuFour = cost.four.slice(1);
  const byCpu = spreadOf(cpuOne.map((ms, round) => ms / (cpuFour[round] ?? Number.NaN)));
  const restartOne = restart.one.slice(1);
  const restartFour = restart.four.slice(1);
  const wall = ratioSpread(rounds.four, rounds.one);
  return [
    {
      name: 'merge/4-inputs-vs-1',
      kind: 'merge',
      ...throughput(messages, rounds.four),
      ratios: { oneInputByCpu: median(cpuOne) / median(cpuFour) },
      values: {
        messages,
        ...ratioRange('oneInputByCpu', byCpu),
        oneInputByWall: wall.median,
        cpuUsPerMessageOne: (1000 * median(cpuOne)) / messages,
        cpuUsPerMessageFour: (1000 * median(cpuFour)) / messages,
        restartMsOne: median(restartOne),
        restartMsFour: median(restartFour),
        restartMsFourMin: Math.min(...restartFour),
        restartMsFourMax: Math.max(...restartFour),
      },
    },
  ];
}

/**
 * Two inputs of `messages / 2` each, the second 10 s of event time behind the first: the
 * first's messages wait in the merge for the second's watermark. What the first holds is
 * computed from what was read (the bound is the second's latest time: the corpus has no
 * disorder): its messages read, less those below that bound.
 */
async function skewCases(messages: number, skewMs: number): Promise<CaseResult[]> {
  const each = Math.max(Math.floor(messages / 2), 2 * skewMs * PER_MS);
  const bounds: readonly (readonly [string, number | undefined])[] = [
    ['default', undefined],
    ['1000', 1_000],
    ['none', 1e9],
  ];
  const held: Record<string, number> = {};
  for (const [name, maxBuffered] of bounds) {
    const broker = new MemoryBroker({ frameMax: LARGE_FRAME_MAX });
    fill(broker, 'ahead', each, (i) => reading(i, skewMs));
    fill(broker, 'behind', each, (i) => reading(i));
    broker.createStream('results');
    const options: MergeOptions = {
      idleAfter: 'never',
      ...(maxBuffered === undefined ? {} : { maxBufferedPerInput: maxBuffered }),
    };
    const job = totalsJob(
      aggregate<Reading>(mergeInputs([broker.source('ahead'), broker.source('behind')], options)),
      broker,
      'results',
    );
    const read = { ahead: 0, behind: 0 };
    let mostHeld = 0;
    job.on('read', ({ stream, messages: count }) => {
      if (stream === 'ahead') read.ahead += count;
      else read.behind += count;
      // The bound is the lagging input's latest time; the first's times are skewMs above.
      const bound = read.behind === 0 ? 0 : reading(read.behind - 1).at;
      const released = Math.min(read.ahead, Math.max(0, (bound - skewMs) * PER_MS));
      mostHeld = Math.max(mostHeld, read.ahead - released);
    });
    await job.run({ untilCaughtUp: true });
    held[name] = mostHeld;
  }
  return [
    {
      name: 'merge/skew',
      kind: 'merge',
      msgsPerSec: Number.NaN,
      ratios: {},
      values: {
        messagesPerInput: each,
        skewMessages: skewMs * PER_MS,
        heldDefault: held.default ?? Number.NaN,
        held1000: held['1000'] ?? Number.NaN,
        heldUnbounded: held.none ?? Number.NaN,
      },
      notes: [
        'held: the most messages the input ahead held in the merge (read, less those below the lagging input’s latest time)',
      ],
    },
  ];
}
