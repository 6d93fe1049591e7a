// The SIGKILL crash test of steps larger than one write, on RabbitMQ: a job whose every step
// has 100,000 outputs (8 writes of about 1 MB, each under its own publishing id) runs as a
// child process killed with SIGKILL right after the broker confirmed a write picked at random
// (the next write on its way or about to be), and is restarted each time; a restart that finds
// a step not whole goes back to the step before and writes the step again, the broker
// discarding the writes it already has. The target must then hold every part once, read as
// each step once and whole, byte-identical to the job's uninterrupted run on the embedded
// broker. Beside the job, a database sink (its own child process, killed now and then too)
// reads the target into PostgreSQL as it is written, steps not whole included: its table must
// end exactly as the source messages say, and no transaction of it may have committed part of
// a step.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it, onTestFinished, vi } from 'vitest';
import {
  DEFAULT_FRAME_MAX,
  decodeResult,
  maxWriteBytes,
  readResults,
  readStepId,
  type DecodedResult,
} from '../../src/index.js';
import { dataSections, decodeMessage } from '../../src/codecs/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { startChild, type StartedChild } from '../support/children/killed-child.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import {
  WIDE_COMMITS_DDL,
  WIDE_COMMITS_TABLE,
  WIDE_KEYS,
  WIDE_STEPS_PRODUCER,
  WIDE_TOTALS_TABLE,
  wideStepLastOffset,
  type CommittedPart,
  wideStepsJob,
  wideStepsSource,
  wideValue,
  type KeyedValue,
} from '../support/jobs/wide-steps.js';
import { bound } from '../support/timing.js';

const STEPS = 3;
const KILLS = 20;
/** The job's kills after which the sink is killed too: at once, or once it applies a batch. */
const SINK_KILLS = new Map<number, 'now' | 'applying'>([
  [4, 'now'],
  [9, 'applying'],
  [14, 'now'],
  [16, 'applying'],
]);
const child = fileURLToPath(new URL('./wide-steps-sigkill-child.ts', import.meta.url));
const SINK = 'wide-steps-sink';
const sinkChild = fileURLToPath(new URL('./wide-steps-sink-child.ts', import.meta.url));
const url = inject('rabbitmqUrl');
const real = rabbitForTests();
const db = postgresForTests();
const messages = wideStepsSource(STEPS);
const stepOffsets = Array.from({ length: STEPS }, (_, s) => wideStepLastOffset(s));
let source = '';

beforeAll(async () => {
  source = await real.newStream('wide-steps-source');
  const feeder = real.rabbit.target(source, { producer: 'feeder' });
  const pending: Promise<void>[] = [];
  for (let i = 0; i < messages.length; i += 500) {
    const chunk = messages.slice(i, i + 500);
    pending.push(feeder.publish(BigInt(i + chunk.length - 1), chunk));
  }
  await Promise.all(pending);
  await feeder.close();
}, bound(120_000));

/** The job's uninterrupted run on the embedded broker, over streams named as on RabbitMQ. */
async function uninterrupted(target: string): Promise<Buffer[]> {
  const broker = new MemoryBroker({ frameMax: DEFAULT_FRAME_MAX });
  broker.createStream(source);
  broker.createStream(target);
  for (let i = 0; i < messages.length; i += 500) broker.append(source, messages.slice(i, i + 500));
  await wideStepsJob(
    broker.source(source),
    broker.target(target, { producer: WIDE_STEPS_PRODUCER }),
  ).run({ untilCaughtUp: true });
  return broker.messages(target).map((m) => Buffer.from(m.bytes));
}

/** The first step a child started now writes (again), from the producer's last id. */
function firstStepLeft(lastId: bigint): number {
  const step = readStepId(lastId);
  if (step.kind === 'none') return 0;
  if (step.kind === 'offset') throw new Error(`an id of the earlier scheme: ${lastId}`);
  // A step not whole is written again; a whole one is done.
  const left = stepOffsets.findIndex((o) => (step.last ? o > step.offset : o >= step.offset));
  return left === -1 ? STEPS : left;
}

/** The database sink's checkpoint: the last target offset it applied, -1 before any. */
async function sinkCheckpoint(): Promise<number> {
  const rows = await db
    .query<{ o: string }>(
      'SELECT last_offset::text AS o FROM stream_windows_checkpoints WHERE sink = $1',
      [SINK],
    )
    .catch(() => []);
  return rows[0] === undefined ? -1 : Number(rows[0].o);
}

/**
 * The sums the source messages say, by key and window start (epoch ms): each message decoded
 * (its creation time and JSON body), the windows before the last message's, which it leaves
 * open.
 */
function expectedTotals(): Map<string, number> {
  const totals = new Map<string, number>();
  let lastWindow = -Infinity;
  for (const bytes of messages) {
    const time = decodeMessage(bytes).properties?.creationTime ?? NaN;
    const window = Math.floor(time / 1000) * 1000;
    const { k, v } = JSON.parse(Buffer.concat(dataSections(bytes)).toString()) as KeyedValue;
    const at = `k${k} ${window}`;
    totals.set(at, (totals.get(at) ?? 0) + v);
    lastWindow = Math.max(lastWindow, window);
  }
  for (const at of totals.keys()) if (at.endsWith(` ${lastWindow}`)) totals.delete(at);
  return totals;
}

/** One of the database sink's child processes. */
interface SinkRun {
  readonly child: StartedChild;
  /** It began to apply a batch and has not committed it yet. */
  applying: boolean;
  killed: boolean;
}

/**
 * The database sink's child processes, one at a time, started again each time the test kills
 * one, until `stop`. A child that ends any other way is a failure, kept in `failures`.
 */
class SinkLane {
  /** Per kill: whether the child had begun to apply a batch it had not committed. */
  readonly kills: ('applying' | 'waiting')[] = [];
  private current: SinkRun | undefined;
  private applyingKill: number | undefined;
  private stopped = false;
  /** How children ended other than by a kill: exited, or failed. */
  readonly failures: unknown[] = [];

  constructor(private readonly args: readonly string[]) {
    this.start();
  }

  /** Kills the child now. */
  killNow(): void {
    if (this.current !== undefined) this.kill(this.current);
  }

  /** Kills the child `delayMs` after it next begins to apply a batch (mid-transaction, mostly). */
  killWhenApplying(delayMs: number): void {
    this.applyingKill = delayMs;
  }

  /** Kills the child for good. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.child.kill();
    await this.current?.child.ended.catch(() => undefined);
  }

  private start(): void {
    const run: SinkRun = {
      applying: false,
      killed: false,
      child: startChild(sinkChild, this.args, (mark) => {
        if (mark === 'p') run.applying = false;
        if (mark !== 't') return;
        run.applying = true;
        const delayMs = this.applyingKill;
        if (delayMs === undefined || run.killed) return;
        this.applyingKill = undefined;
        setTimeout(() => this.kill(run), delayMs);
      }),
    };
    this.current = run;
    run.child.ended.then(
      (killed) => {
        if (!killed) this.failures.push(new Error('the sink child exited before its kill'));
        else if (!this.stopped) this.start();
      },
      (error: unknown) => this.failures.push(error),
    );
  }

  private kill(run: SinkRun): void {
    if (this.stopped || run.killed) return;
    run.killed = true;
    this.kills.push(run.applying ? 'applying' : 'waiting');
    run.child.kill();
  }
}

interface Kill {
  /** The child killed itself at the chosen write (false: it caught up first). */
  readonly atChosenWrite: boolean;
  /** The producer's last id after the kill names a write that is not its step's last. */
  readonly notWhole: boolean;
  /** Step.write chosen -> step.write the producer's last id names after the kill. */
  readonly at: string;
}

describe('the job of 100,000 outputs a step killed with SIGKILL between its writes', () => {
  it(
    'should leave every part stored once, each step read once and whole, byte-identical to an uninterrupted run, and the database sink reading it exact',
    async () => {
      const target = await real.newStream('wide-steps-target');
      await db.query(WIDE_COMMITS_DDL);
      const sink = new SinkLane([url, db.url, target, SINK]);
      onTestFinished(() => sink.stop());
      const watcher = real.rabbit.target(target, { producer: 'wide-steps-watcher' });
      // The embedded broker writes as RabbitMQ does only with the same limit per write.
      expect(watcher.maxWriteBytes).toBe(maxWriteBytes(DEFAULT_FRAME_MAX));
      const lastId = () => watcher.lastPublishingIdOf(WIDE_STEPS_PRODUCER);

      let started = Date.now();
      const expected = await uninterrupted(target);
      const uninterruptedMs = Date.now() - started;
      const expectedSteps = expected.map((bytes) => decodeResult(bytes));
      const writes = expectedSteps[0]?.part?.of ?? 1;
      // One message per write ('single' packing): every step takes several writes.
      expect(expectedSteps).toHaveLength(STEPS * writes);
      expect(writes).toBeGreaterThanOrEqual(4);

      const seed = Date.now() % 2 ** 31;
      const random = seededRandom(seed);
      const sinkRandom = seededRandom(seed + 1);
      const kills: Kill[] = [];
      started = Date.now();
      for (let k = 0; k < KILLS; k++) {
        // A random write of a step this run writes (the first a step not whole, which it
        // writes again from its first write), the kills spread over the steps in order: the
        // child kills itself once the broker has confirmed that write. Not the last step's last
        // two, so that the job never catches up (the write after the chosen one may be stored
        // too): every kill falls in a step.
        const left = firstStepLeft(await lastId());
        const step = Math.max(left, Math.floor((k * STEPS) / KILLS));
        const write = Math.floor(random() * (step === STEPS - 1 ? writes - 2 : writes - 1));
        const killAt = (step - left) * writes + write + 1;
        let caughtUp = false;
        const run = startChild(child, [url, source, target, String(killAt)], (mark) => {
          if (mark !== 'd') return;
          caughtUp = true;
          run.kill();
        });
        expect(await run.ended).toBe(true);
        const sinkKill = SINK_KILLS.get(k);
        if (sinkKill === 'now') sink.killNow();
        if (sinkKill === 'applying') sink.killWhenApplying(Math.floor(sinkRandom() * 1000));
        const after = readStepId(await lastId());
        const lastStored =
          after.kind !== 'write'
            ? '-'
            : `${stepOffsets.indexOf(after.offset)}.${after.last ? 'last' : after.write}`;
        kills.push({
          atChosenWrite: !caughtUp,
          notWhole: after.kind === 'write' && !after.last,
          at: `${step}.${write}->${lastStored}`,
        });
      }
      const killedMs = Date.now() - started;
      const [beside] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${WIDE_COMMITS_TABLE}`,
      );
      started = Date.now();
      expect(await startChild(child, [url, source, target]).ended).toBe(false);
      const lastRunMs = Date.now() - started;
      await watcher.close();
      // The sink applies what the job wrote last, then is stopped for good.
      started = Date.now();
      await vi.waitFor(async () => expect(await sinkCheckpoint()).toBe(expected.length - 1), {
        timeout: bound(120_000),
        interval: 250,
      });
      const sinkCaughtUpMs = Date.now() - started;
      await sink.stop();
      expect(sink.failures).toEqual([]);

      const notWhole = kills.filter((k) => k.notWhole).length;
      const hits = kills.filter((k) => k.atChosenWrite).length;
      console.log(
        `wide steps crash test (seed ${seed}): ${KILLS} SIGKILLs, ${hits} at the chosen write, ` +
          `${notWhole} leaving a step not whole (${STEPS} steps of ${writes} writes; step.write ` +
          `chosen -> last stored: ${kills.map((k) => k.at).join(' ')}); ` +
          `uninterrupted run on the embedded broker ${uninterruptedMs} ms, killed runs ` +
          `${killedMs} ms, last run ${lastRunMs} ms; the database sink killed ${sink.kills.length} ` +
          `times (${sink.kills.join(' ')}), ${beside?.n} transactions committed while the job was killed, ` +
          `caught up ${sinkCaughtUpMs} ms after the job's last run`,
      );

      // Every part stored exactly once: no write kept twice, none missing.
      const actual = (await readAll(real.rabbit, target)).map((bytes) => Buffer.from(bytes));
      const stored = actual.map((bytes) => decodeResult<number>(bytes));
      const parts = new Map<string, number>();
      for (const { producer, lastOffset, part } of stored) {
        const at = `${producer} ${lastOffset} ${part?.index}`;
        parts.set(at, (parts.get(at) ?? 0) + 1);
      }
      expect([...parts.values()].filter((n) => n !== 1)).toEqual([]);
      const byStep = new Map<bigint, DecodedResult<number>[]>();
      for (const result of stored) {
        expect(result.producer).toBe(WIDE_STEPS_PRODUCER);
        byStep.set(result.lastOffset, [...(byStep.get(result.lastOffset) ?? []), result]);
      }
      expect([...byStep.keys()]).toEqual(stepOffsets);
      for (const stepParts of byStep.values()) {
        const of = stepParts[0]?.part?.of;
        expect(stepParts.map((p) => p.part)).toEqual(
          Array.from({ length: of ?? 0 }, (_, index) => ({ index, of })),
        );
      }

      // Read back, each step once and whole, with the sums the source says.
      const read: DecodedResult<number>[] = [];
      for await (const item of readResults<number>(real.rabbit.source(target), {
        untilCaughtUp: true,
      })) {
        read.push(item.result);
      }
      expect(read.map((r) => r.lastOffset)).toEqual(stepOffsets);
      for (const [s, result] of read.entries()) {
        expect(result.part).toBeUndefined();
        expect(result.outputCount).toBe(WIDE_KEYS);
        expect(result.outputs).toHaveLength(result.outputCount);
        expect(new Set(result.outputs.map((o) => o.key)).size).toBe(WIDE_KEYS);
        const sum = result.outputs.reduce((n, o) => n + o.value, 0);
        let expectedSum = 0;
        for (let i = 0; i < WIDE_KEYS; i++) expectedSum += wideValue(s, i).v;
        expect(sum).toBe(expectedSum);
      }

      // As the uninterrupted run wrote it, message for message.
      expect(actual).toHaveLength(expected.length);
      for (const [i, bytes] of actual.entries()) {
        expect(bytes.equals(expected[i] as Buffer), `message ${i}`).toBe(true);
      }

      // The database sink's table: the sums the source messages say, every one, nothing else.
      const totals = expectedTotals();
      const rows = await db.query<{
        key: string;
        w: string;
        span: string;
        count: number;
        total: string;
      }>(
        'SELECT key, (extract(epoch FROM window_start) * 1000)::bigint::text AS w, ' +
          `(window_end - window_start)::text AS span, count, total::text FROM ${WIDE_TOTALS_TABLE}`,
      );
      expect(rows).toHaveLength(totals.size);
      expect(totals.size).toBe(STEPS * WIDE_KEYS);
      const wrong = rows.filter(
        (r) =>
          totals.get(`${r.key} ${r.w}`) !== Number(r.total) ||
          r.count !== 1 ||
          r.span !== '00:00:01',
      );
      expect(wrong.slice(0, 5)).toEqual([]);

      // No transaction of the sink committed part of a step: each held whole steps (every part
      // of each, in order), the table held every window's 100,000 rows or none after each, and
      // together they applied each message of the target once, in order.
      const commits = await db.query<{
        first_offset: string;
        last_offset: string;
        parts: CommittedPart[];
        windows: Record<string, number>;
      }>(
        `SELECT first_offset::text, last_offset::text, parts, windows FROM ${WIDE_COMMITS_TABLE} ORDER BY id`,
      );
      for (const commit of commits) {
        const steps: CommittedPart[][] = [];
        for (const part of commit.parts) {
          const step = steps.at(-1);
          if (step?.[0]?.[0] === part[0]) step.push(part);
          else steps.push([part]);
        }
        for (const step of steps) {
          const [lastOffset, , of] = step[0] as CommittedPart;
          expect(step, `a transaction ending at offset ${commit.last_offset}`).toEqual(
            Array.from({ length: of ?? 1 }, (_, index) => [
              lastOffset,
              of === null ? null : index,
              of,
            ]),
          );
        }
        expect(Object.values(commit.windows).filter((n) => n !== WIDE_KEYS)).toEqual([]);
      }
      expect(commits.flatMap((c) => c.parts)).toEqual(
        stored.map((r): CommittedPart => [
          String(r.lastOffset),
          r.part?.index ?? null,
          r.part?.of ?? null,
        ]),
      );
      let next = 0n;
      for (const commit of commits) {
        expect(BigInt(commit.first_offset)).toBe(next);
        next = BigInt(commit.last_offset) + 1n;
      }
      expect(await sinkCheckpoint()).toBe(actual.length - 1);
      expect(sink.kills.length).toBeGreaterThanOrEqual(2);
      // It read the target as the job wrote it, not only once the job was done.
      expect(beside?.n).toBeGreaterThanOrEqual(1);

      // Every kill came at its write, and only a kill in a step before the last can leave its
      // step whole (the write after the chosen one stored too, and it was the step's last):
      // each such kill moves the job past a step, so at most STEPS - 1 of them.
      expect(hits).toBe(KILLS);
      expect(notWhole).toBeGreaterThanOrEqual(KILLS - (STEPS - 1));
    },
    bound(300_000),
  );
});
