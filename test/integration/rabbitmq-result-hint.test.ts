// The RabbitMQ target's result hint (src/rabbitmq/write/result-hint.ts, checked by
// src/rabbitmq/write/result-lookup.ts): a job's target notes where its producer's last result
// lies, a restart reads it there whatever others wrote after it, and a hint that is missing,
// stale, wrong, past the end or removed by retention changes nothing but the time.
import { describe, expect, it } from 'vitest';
import { aggregate, decodeResult, jsonMessage, type Source, type Target } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { messageAt } from '../../src/ports/chunk-message.js';
import { readRange } from '../../src/rabbitmq/read/stream-range.js';
import { hintReference } from '../../src/rabbitmq/write/result-hint.js';
import { lookUpResult, type HintUse } from '../../src/rabbitmq/write/result-lookup.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { othersResults, publishInTurn, resultMessages } from '../support/results/stored-results.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const TIMEOUT_MS = bound(10_000);

/** Each stored result's offset, producer and id, in offset order. */
async function resultsOn(stream: string) {
  const source = real.rabbit.source(stream);
  const end = await source.endOffset();
  const found: { offset: bigint; producer: string; id: bigint }[] = [];
  if (end === 0n) return found;
  await readRange(source, 'first', end, TIMEOUT_MS, (chunk, count) => {
    for (let i = 0; i < count; i++) {
      const result = decodeResult(messageAt(chunk, i));
      found.push({
        offset: chunk.firstOffset + BigInt(i),
        producer: result.producer,
        id: result.lastOffset,
      });
    }
    return false;
  });
  return found;
}

/** Where a result of `producer` lies: the first of `results` that `pick` accepts. */
function offsetWhere(
  results: Awaited<ReturnType<typeof resultsOn>>,
  pick: (result: { producer: string; id: bigint; offset: bigint }) => boolean,
): bigint {
  const result = results.find(pick);
  if (result === undefined) throw new Error('no such result on the stream');
  return result.offset;
}

const storedHint = (stream: string, producer: string) =>
  real.rabbit.source(stream).storedOffset(hintReference(stream, producer));

const plantHint = (stream: string, producer: string, offset: bigint) =>
  real.rabbit.source(stream).storeOffset(hintReference(stream, producer), offset);

/** The hint `producer`'s target notes, once there is one (within 10 s). */
async function awaitHint(stream: string, producer: string): Promise<bigint> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const hint = await storedHint(stream, producer);
    if (hint !== undefined) return hint;
    if (Date.now() > deadline) throw new Error(`no hint for ${producer} on ${stream}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("the RabbitMQ target's result hint", () => {
  it("notes a job's last result, which a lookup then reads at once, however much others write after it", async () => {
    const stream = await real.newStream('hint-kept');
    await publishInTurn(real.rabbit, stream, [othersResults(['archive'], 300, 0n)]);
    const target = real.rabbit.target(stream, { producer: 'ours', resultHintMs: 300 });
    try {
      await target.lastPublishingId(); // as a job's start: its hints begin
      for (let id = 10n; id <= 100n; id += 10n) {
        await target.publish(id, resultMessages('ours', id));
      }
      const hint = await awaitHint(stream, 'ours');
      const lookUp = (withHint: bigint | undefined) =>
        lookUpResult(real.rabbit.params, stream, 'ours', 100n, TIMEOUT_MS, {}, withHint);
      const before = await lookUp(hint);
      expect(before.message).toEqual(resultMessages('ours', 100n)[0]);
      expect(before.hint).toBe('at-hint');

      await publishInTurn(real.rabbit, stream, [othersResults(['billing', 'audit'], 3_000, 0n)]);
      const after = await lookUp(hint);
      expect(after.message).toEqual(resultMessages('ours', 100n)[0]);
      expect(after.hint).toBe('at-hint');
      // What it read did not grow with the 3,000 results written after ours.
      expect(after.messagesRead).toBe(before.messagesRead);
      expect(after.windows).toBe(1);
      const unhinted = await lookUp(undefined);
      expect(unhinted.message).toEqual(resultMessages('ours', 100n)[0]);
      expect(unhinted.messagesRead).toBeGreaterThan(1_500);
      // The target's own readResult goes through the hint it stored.
      expect(await target.readResult(100n)).toEqual(resultMessages('ours', 100n)[0]);
    } finally {
      await target.close();
    }
  });

  it('notes nothing for a target whose resume point was never read (one that feeds a stream)', async () => {
    const stream = await real.newStream('hint-feeder');
    const target = real.rabbit.target(stream, { producer: 'feeder', resultHintMs: 100 });
    try {
      for (let id = 1n; id <= 5n; id++) await target.publish(id, resultMessages('feeder', id));
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(await storedHint(stream, 'feeder')).toBeUndefined();
      // No tracking chunk took an offset: the next write lies right after the last.
      await target.publish(6n, resultMessages('feeder', 6n));
      expect((await resultsOn(stream)).map((r) => r.offset)).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
    } finally {
      await target.close();
    }
  });

  it("notes nothing by default: a job's target keeps its offsets one per message", async () => {
    const stream = await real.newStream('hint-default');
    const target = real.rabbit.target(stream, { producer: 'job' });
    try {
      await target.lastPublishingId(); // as a job's start
      await target.publish(1n, resultMessages('job', 1n));
      // Past the 2 s a hint would wait for once on, then quiet for longer than its 50 ms.
      await new Promise((resolve) => setTimeout(resolve, 2_200));
      await target.publish(2n, resultMessages('job', 2n));
      await new Promise((resolve) => setTimeout(resolve, 400));
      await target.publish(3n, resultMessages('job', 3n));
      expect(await storedHint(stream, 'job')).toBeUndefined();
      expect((await resultsOn(stream)).map((r) => r.offset)).toEqual([0n, 1n, 2n]);
    } finally {
      await target.close();
    }
  });

  describe('a hint that is not where our last result lies', () => {
    /** History, our result 10, others, our result 20, others after. */
    async function laidOut(options: Parameters<typeof real.newStream>[1] = {}) {
      const stream = await real.newStream('hint-checked', options);
      await publishInTurn(real.rabbit, stream, [
        othersResults(['archive'], 200, 0n),
        [{ producer: 'ours', id: 10n }],
        othersResults(['billing', 'audit'], 100, 0n),
        [{ producer: 'ours', id: 20n }],
        othersResults(['billing', 'audit'], 500, 1_000n),
      ]);
      return stream;
    }

    it.each<
      [string, (results: Awaited<ReturnType<typeof resultsOn>>, end: bigint) => bigint, HintUse]
    >([
      [
        "another producer's result after ours",
        (results) => offsetWhere(results, (r) => r.producer === 'billing' && r.id === 1_200n),
        'before-hint',
      ],
      [
        "another producer's result before ours",
        (results) => offsetWhere(results, (r) => r.producer === 'archive' && r.id === 3n),
        'after-hint',
      ],
      [
        'an older result of ours (stale)',
        (results) => offsetWhere(results, (r) => r.producer === 'ours' && r.id === 10n),
        'after-hint',
      ],
      ['past the end', (_, end) => end + 1_000n, 'unusable'],
    ])('changes nothing but the time when it points at %s', async (_, hintOf, use) => {
      const stream = await laidOut();
      const results = await resultsOn(stream);
      const end = await real.rabbit.source(stream).endOffset();
      await plantHint(stream, 'ours', hintOf(results, end));
      const hint = await storedHint(stream, 'ours');
      expect(hint).toBe(hintOf(results, end));
      const lookup = await lookUpResult(
        real.rabbit.params,
        stream,
        'ours',
        20n,
        TIMEOUT_MS,
        {},
        hint,
      );
      expect(lookup.hint).toBe(use);
      expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
      const target = real.rabbit.target(stream, { producer: 'ours' });
      try {
        expect(await target.readResult(20n)).toEqual(resultMessages('ours', 20n)[0]);
        expect(await target.readResult(10n)).toEqual(resultMessages('ours', 10n)[0]);
        expect(await target.readResult(15n)).toBeUndefined();
      } finally {
        await target.close();
      }
    });

    it('changes nothing but the time when retention removed what it points at', async () => {
      const stream = await real.newStream('hint-retention', {
        maxLengthBytes: 20_000,
        maxSegmentSizeBytes: 5_000,
      });
      // Retention runs when a segment is full: enough others' results to roll several.
      await publishInTurn(real.rabbit, stream, [
        othersResults(['archive'], 400, 0n),
        [{ producer: 'ours', id: 20n }],
        othersResults(['billing'], 10, 0n),
      ]);
      const first = (await resultsOn(stream))[0]?.offset ?? 0n;
      expect(first).toBeGreaterThan(0n);
      await plantHint(stream, 'ours', 0n);
      const lookup = await lookUpResult(
        real.rabbit.params,
        stream,
        'ours',
        20n,
        TIMEOUT_MS,
        {},
        0n,
      );
      expect(lookup.hint).toBe('unusable');
      expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
      const target = real.rabbit.target(stream, { producer: 'ours' });
      try {
        expect(await target.readResult(20n)).toEqual(resultMessages('ours', 20n)[0]);
      } finally {
        await target.close();
      }
    });
  });
});

interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

const readings = (from: number, count: number): Uint8Array[] =>
  Array.from({ length: count }, (_, i) =>
    jsonMessage({
      sensor: `s${(from + i) % 3}`,
      value: from + i,
      t: 1_000 * (from + i),
    } satisfies Reading),
  );

/** An event-time job: 10 s tumbling windows with a grace, per sensor. */
async function runJob(source: Source, target: Target): Promise<bigint | 'first'> {
  let from: bigint | 'first' = 'first';
  const runner = aggregate<Reading>(source)
    .eventTime((r) => r.t)
    .tumbling('10s', { grace: '3s' })
    .key((r) => r.sensor)
    .reduce((sum, r) => sum + r.value, 0)
    .to(target, { retryDelayMs: 0 });
  runner.on('started', (event) => {
    from = event.from;
  });
  await runner.run({ untilCaughtUp: true });
  return from;
}

/**
 * The job over 30 readings, 30 more, then 60 more, on the embedded broker, with the same
 * stream names (they are in the results): its results and its third start.
 */
async function onMemory(
  source: string,
  target: string,
): Promise<{ results: Buffer[]; from: bigint | 'first' }> {
  const broker = new MemoryBroker();
  broker.createStream(source);
  broker.createStream(target);
  let from: bigint | 'first' = 'first';
  for (const [first, count] of [
    [0, 30],
    [30, 30],
    [60, 60],
  ] as const) {
    broker.append(source, readings(first, count));
    from = await runJob(broker.source(source), broker.target(target, { producer: 'job' }));
  }
  return { results: broker.messages(target).map((m) => Buffer.from(m.bytes)), from };
}

describe('an event-time job restarting on RabbitMQ with a hint that is not where its last result lies', () => {
  it.each<
    [string, (results: Awaited<ReturnType<typeof resultsOn>>, end: bigint) => bigint | undefined]
  >([
    ['missing', () => undefined],
    ["at another producer's result after ours", (results) => results.at(-3)?.offset],
    ["at another producer's result before ours", () => 2n],
    [
      'at an older result of ours (stale)',
      (results) => offsetWhere(results, (r) => r.producer === 'job'),
    ],
    ['past the end', (_, end) => end + 500n],
  ])(
    'resumes at the same offset and writes byte-identical results, hint %s',
    async (_, hintOf) => {
      const source = await real.newStream('hint-job-readings');
      const stream = await real.newStream('hint-job-sums');
      const expected = await onMemory(source, stream);
      await publishInTurn(real.rabbit, stream, [othersResults(['archive'], 50, 0n)]);
      // Two runs, others' results between and after them; its own hints off: the test plants
      // the one it means.
      for (const [first, count, others] of [
        [0, 30, 100],
        [30, 30, 300],
      ] as const) {
        await publishAll(real.rabbit, source, readings(first, count));
        const target = real.rabbit.target(stream, { producer: 'job', resultHintMs: 0 });
        await runJob(real.rabbit.source(source), target).finally(() => target.close());
        await publishInTurn(real.rabbit, stream, [
          othersResults(['billing', 'audit'], others, BigInt(first)),
        ]);
      }
      const results = await resultsOn(stream);
      const hint = hintOf(results, await real.rabbit.source(stream).endOffset());
      if (hint !== undefined) await plantHint(stream, 'job', hint);
      expect(await storedHint(stream, 'job')).toBe(hint);

      await publishAll(real.rabbit, source, readings(60, 60));
      const second = real.rabbit.target(stream, { producer: 'job' });
      const from = await runJob(real.rabbit.source(source), second).finally(() => second.close());
      expect(from).toBe(expected.from);
      const ours = (await readAll(real.rabbit, stream))
        .filter((message) => decodeResult(message).producer === 'job')
        .map((message) => Buffer.from(message));
      expect(ours).toEqual(expected.results);
    },
    bound(60_000),
  );
});
