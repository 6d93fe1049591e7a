// Idle inputs of a job over several inputs, on the embedded broker with the wall clock: an input
// that delivers nothing for `idleAfter` is left out, so the others' windows close; when it
// delivers again its messages are merged from where the others had got (earlier event times are
// late), and that decision rides on the results, so a job crashed at any publish and restarted
// writes the same bytes. The inputs arrive in phases, each appended once the job has published
// what the one before decides, so that every decision is made with the job quiet; what would
// differ with the timing (which input the clock found silent first) decides nothing published.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  mergeInputs,
  type MergeOptions,
} from '../../../src/index.js';
import { MemoryBroker, SimulatedCrash, type FaultPoint } from '../../../src/memory/index.js';
import { until } from '../../support/jobs/outbox-fixture.js';
import { bound } from '../../support/timing.js';

interface Reading {
  readonly at: number;
  readonly value: number;
}

/** Silence long enough between two deliveries of one phase that none is cut by it. */
const IDLE_AFTER_MS = 50;

function readingsBroker(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  for (const stream of ['a', 'b', 'totals']) broker.createStream(stream);
  return broker;
}

function append(broker: MemoryBroker, stream: string, times: readonly number[]): void {
  broker.append(
    stream,
    times.map((at) => jsonMessage({ at, value: 1 })),
  );
}

function totalsJob(broker: MemoryBroker, options: MergeOptions = { idleAfter: IDLE_AFTER_MS }) {
  return aggregate<Reading>(mergeInputs([broker.source('a'), broker.source('b')], options))
    .eventTime((reading) => reading.at)
    .tumbling(1_000, { grace: 0 })
    .reduce((sum, reading) => sum + reading.value, 0)
    .to(broker.target('totals', { producer: 'totals' }));
}

/**
 * Runs the job until stopped, building it again after each SimulatedCrash (its faults cleared
 * first), as a supervisor restarts a process. Resolves with the crashes it saw.
 */
function supervised(broker: MemoryBroker, signal: AbortSignal): Promise<number> {
  return (async () => {
    let crashes = 0;
    for (;;) {
      try {
        await totalsJob(broker).run({ signal });
        return crashes;
      } catch (error) {
        if (!(error instanceof SimulatedCrash)) throw error;
        crashes++;
        broker.clearFaults();
      }
    }
  })();
}

const results = (broker: MemoryBroker) =>
  broker.messages('totals').map((message) => decodeResult<number>(message.bytes));

/**
 * The worked example of docs/guides/windows.md ("A job over several inputs"), in three phases,
 * the job running throughout (crashing where `fault` says); the target's bytes at the end.
 */
async function threePhases(fault?: {
  readonly atPublish: number;
  readonly point: FaultPoint;
}): Promise<{ broker: MemoryBroker; crashes: number }> {
  const broker = readingsBroker();
  if (fault !== undefined) broker.injectFault({ stream: 'totals', ...fault });
  const stop = new AbortController();
  const running = supervised(broker, stop.signal);
  const published = (n: number) =>
    until(() => broker.messages('totals').length >= n, bound(10_000), `${n} results`);
  try {
    // 1. Input b says nothing: left out, so a's [0, 1s) closes at its 1.5 s.
    append(broker, 'a', [0, 500, 1_500, 2_500]);
    await published(1);
    // 2. b comes back, behind: its 1.2 s is late (merged at 2.5 s, where the job had got),
    //    and a, silent by now, lets [1s, 2s) close at its 2.5 s.
    append(broker, 'b', [1_200, 2_700, 3_100]);
    await published(2);
    // 3. a again: b, silent, lets b's 3.1 s close [2s, 3s), with the late 1.2 s.
    append(broker, 'a', [3_500]);
    await published(3);
  } finally {
    stop.abort();
  }
  return { broker, crashes: await running };
}

describe('idle inputs of a job over several inputs', () => {
  it('holds every window while an input has said nothing, without idleAfter', async () => {
    const broker = readingsBroker();
    append(broker, 'a', [0, 500, 1_500, 2_500]);
    const summary = await totalsJob(broker, { idleAfter: 'never' }).run({ untilCaughtUp: true });
    expect(summary.results).toBe(0);
  });

  it('leaves a silent input out, takes it back from where the others got, and records that', async () => {
    const { broker } = await threePhases();
    expect(
      results(broker).map((r) => [
        r.firstOffset,
        r.lastOffset,
        r.outputs.map((o) => [o.start, o.count]),
        r.lateCount,
      ]),
    ).toEqual([
      [0n, 2n, [[0, 2]], 0], // a 0, 500; closed by a's 1.5 s
      [3n, 3n, [[1_000, 1]], 0], // a 1.5 s; closed by a's 2.5 s
      [4n, 6n, [[2_000, 2]], 1], // a 2.5 s, b 2.7 s; b's late 1.2 s; closed by b's 3.1 s
    ]);
    // What a restart takes b again with: its messages merged no earlier than 2.5 s (it was left
    // out then); after the third result, read again from its 3.1 s, and what follows it (left
    // out again) no earlier than 3.5 s.
    expect(results(broker).map((r) => r.recovery?.merge?.inputs[1])).toEqual([
      { from: 0n, maxEventTime: -Infinity, floors: [{ offset: 0n, floor: 2_500 }] },
      { from: 0n, maxEventTime: -Infinity, floors: [{ offset: 0n, floor: 2_500 }] },
      {
        from: 2n,
        maxEventTime: 2_700,
        floors: [
          { offset: 0n, floor: 2_500 },
          { offset: 3n, floor: 3_500 },
        ],
      },
    ]);
  });

  it('writes the same bytes when it crashes at any publish and restarts', async () => {
    const expected = (await threePhases()).broker.messages('totals').map((m) => m.bytes);
    const points: FaultPoint[] = [
      'before-publish',
      'after-publish',
      'after-confirm',
      'lose-confirm',
    ];
    let crashes = 0;
    for (const point of points) {
      for (const atPublish of [1, 2, 3]) {
        const run = await threePhases({ atPublish, point });
        crashes += run.crashes;
        const got = run.broker.messages('totals').map((m) => m.bytes);
        expect(
          got.map((bytes) => Buffer.from(bytes)),
          `${point} at publish ${atPublish}`,
        ).toEqual(expected.map((bytes) => Buffer.from(bytes)));
      }
    }
    // 'after-confirm' at the third publish dies only with the target's next call, which the
    // job, stopped after its third result, never makes; 'lose-confirm' is retried, no crash.
    expect(crashes).toBe(8);
  });
});
