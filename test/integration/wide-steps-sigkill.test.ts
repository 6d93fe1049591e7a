// The SIGKILL crash test of steps larger than one write, on RabbitMQ: a job whose every step
// has 100,000 outputs (8 writes of about 1 MB, each under its own publishing id) runs as a
// child process killed with SIGKILL right after the broker confirmed a write picked at random
// (the next write on its way or about to be), and is restarted each time; a restart that finds
// a step not whole goes back to the step before and writes the step again, the broker
// discarding the writes it already has. The target must then hold every part once, read as
// each step once and whole, byte-identical to the job's uninterrupted run on the embedded
// broker.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import {
  DEFAULT_FRAME_MAX,
  decodeResult,
  maxWriteBytes,
  readResults,
  readStepId,
  type DecodedResult,
} from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { startChild } from '../support/children/killed-child.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import {
  WIDE_KEYS,
  WIDE_STEPS_PRODUCER,
  wideStepLastOffset,
  wideStepsJob,
  wideStepsSource,
  wideValue,
} from '../support/jobs/wide-steps.js';
import { bound } from '../support/timing.js';

const STEPS = 3;
const KILLS = 20;
const child = fileURLToPath(new URL('./wide-steps-sigkill-child.ts', import.meta.url));
const url = inject('rabbitmqUrl');
const real = rabbitForTests();
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
    'should leave every part stored once, each step read once and whole, byte-identical to an uninterrupted run',
    async () => {
      const target = await real.newStream('wide-steps-target');
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
      started = Date.now();
      expect(await startChild(child, [url, source, target]).ended).toBe(false);
      const lastRunMs = Date.now() - started;
      await watcher.close();

      const notWhole = kills.filter((k) => k.notWhole).length;
      const hits = kills.filter((k) => k.atChosenWrite).length;
      console.log(
        `wide steps crash test (seed ${seed}): ${KILLS} SIGKILLs, ${hits} at the chosen write, ` +
          `${notWhole} leaving a step not whole (${STEPS} steps of ${writes} writes; step.write ` +
          `chosen -> last stored: ${kills.map((k) => k.at).join(' ')}); ` +
          `uninterrupted run on the embedded broker ${uninterruptedMs} ms, killed runs ` +
          `${killedMs} ms, last run ${lastRunMs} ms`,
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

      // Every kill came at its write, and only a kill in a step before the last can leave its
      // step whole (the write after the chosen one stored too, and it was the step's last):
      // each such kill moves the job past a step, so at most STEPS - 1 of them.
      expect(hits).toBe(KILLS);
      expect(notWhole).toBeGreaterThanOrEqual(KILLS - (STEPS - 1));
    },
    bound(300_000),
  );
});
