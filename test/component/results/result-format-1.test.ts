// Results already on targets stay readable and a job restarts from them: the bytes of
// test/fixtures/result-format-1.json are what encodeResult and a job's run wrote in format '1'
// (at da2e8b5, before format '2'), not made by today's code.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeMessage } from '../../../src/codecs/amqp-message.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { type PackMode, type SingleFormat } from '../../../src/result-format/result-format.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import {
  aggregate,
  decodeResult,
  fromResults,
  jsonMessage,
  readResults,
  tumbling,
  type ReadResult,
  type TargetOptions,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';

interface StoredWrite {
  readonly publishingId: string;
  readonly messages: readonly string[];
}
interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}
const FIXTURE = JSON.parse(
  readFileSync(new URL('../../fixtures/result-format-1.json', import.meta.url), 'utf8'),
) as {
  readings: Reading[];
  decode: Record<'step' | 'eventTime' | 'empty', Record<Packing, string[]>>;
  jobs: Record<Packing, Record<'step' | 'eventTime', StoredWrite[]>>;
};

type Packing = 'sections' | 'batch' | 'single msgpack' | 'single json';
const PACKINGS: Record<Packing, { pack: PackMode; format?: SingleFormat }> = {
  sections: { pack: 'sections' },
  batch: { pack: 'batch' },
  'single msgpack': { pack: 'single', format: 'msgpack' },
  'single json': { pack: 'single', format: 'json' },
};
const bytesOf = (base64: string) => new Uint8Array(Buffer.from(base64, 'base64'));

// The results the fixture's messages were encoded from (see its "about").
const metadata = {
  source: 'readings',
  producer: 'rollups',
  window: 'tumbling(1m)',
  definition: '{"source":"readings","window":"tumbling(1m)"}',
};
const RESULTS: Record<'step' | 'eventTime' | 'empty', StepResult<unknown>> = {
  step: {
    firstOffset: 10n,
    lastOffset: 17n,
    messages: 8,
    window: { start: 1767268800000, end: 1767268860000 },
    outputs: [
      { key: 's1', count: 2, value: 42.5 },
      { key: 7, count: 1, value: { max: 3, tags: ['x'] } },
      { key: null, count: 1, value: 9007199254740993n },
    ],
    late: [{ sensor: 's1', value: 1 }],
    lateDropped: 1,
    filtered: 1,
    deadLetters: [
      {
        offset: 12n,
        stage: 'decode',
        error: 'SyntaxError: bad',
        message: Uint8Array.of(0, 0x53, 0x75, 0xa0, 1, 0x7b),
      },
    ],
  },
  eventTime: {
    firstOffset: 20n,
    lastOffset: 25n,
    messages: 6,
    window: null,
    outputs: [
      { key: 'a', start: 1767268800000, end: 1767268860000, count: 3, value: 6, final: false },
      { key: 'b', start: 1767268740000, end: 1767268800000, count: 1, value: 2, continues: true },
    ],
    late: [],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [],
    recovery: {
      watermark: 1767268855000,
      offset: 21n,
      offsetWatermark: 1767268850000,
      lastFlush: 22n,
      openCounts: [
        ['a', 21n],
        ['b', 23n, 2],
      ],
    },
    flushed: true,
  },
  empty: {
    firstOffset: 30n,
    lastOffset: 31n,
    messages: 2,
    window: { start: 1767268860000, end: 1767268920000 },
    outputs: [],
    late: [],
    lateDropped: 0,
    filtered: 2,
    deadLetters: [],
  },
};

describe("results of format '1'", () => {
  it.each(Object.keys(RESULTS) as (keyof typeof RESULTS)[])(
    'should decode a %s result of every packing as the same result in format 2 decodes',
    (name) => {
      let decoded = 0;
      for (const [packing, { pack, format }] of Object.entries(PACKINGS)) {
        const stored = FIXTURE.decode[name][packing as Packing].map(bytesOf);
        expect(stored.map((b) => decodeMessage(b).applicationProperties?.['sw-format'])).toEqual(
          stored.map(() => '1'),
        );
        const now = encodeResult(RESULTS[name], metadata, pack, format).map(decodeResult);
        expect(stored.map((bytes) => decodeResult(bytes))).toEqual(now);
        decoded += stored.length;
      }
      expect(decoded).toBeGreaterThanOrEqual(4);
    },
  );
});

// The fixture's jobs (test/fixtures/result-format-1.json, "jobs"): readings one per chunk, a
// message that is not AMQP at offset 9, the job below; more readings now close its windows.
const T0 = Date.UTC(2026, 0, 1);
const later: Reading[] = [250, 320, 400, 530].map((s, i) => ({
  sensor: 'ab'[i % 2] as string,
  value: 10 + i,
  t: T0 + s * 1000,
}));

function sourceBroker(readings: readonly Reading[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('source');
  broker.createStream('target');
  const append = (r: Reading) =>
    broker.append('source', [jsonMessage(r, { creationTime: r.t })], { timestamp: T0 });
  FIXTURE.readings.forEach(append);
  broker.append('source', [new TextEncoder().encode('not an amqp message')], { timestamp: T0 });
  readings.forEach(append);
  return broker;
}

function run(broker: MemoryBroker, eventTime: boolean, options: TargetOptions<number>) {
  const base = aggregate<Reading>(broker.source('source')).onError('dead-letter');
  const job = eventTime
    ? base
        .eventTime((r) => r.t)
        .key((r) => r.sensor)
        .window(tumbling('1m', { grace: '5s' }))
        .maxOutOfOrderness('5s')
        .late('side')
    : base.key((r) => r.sensor).tumbling('1m');
  return job
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'p' }), options)
    .run({ untilCaughtUp: true });
}

/** What a reader keeps of a result: everything but its packing. */
const content = ({ result }: ReadResult) => ({
  lastOffset: result.lastOffset,
  outputs: result.outputs,
  late: result.late,
  deadLetters: result.deadLetters.map((d) => d.offset),
  recovery: result.recovery,
});

async function readAll(broker: MemoryBroker): Promise<ReadResult[]> {
  const all: ReadResult[] = [];
  for await (const item of readResults(broker.source('target'), { untilCaughtUp: true })) {
    all.push(item);
  }
  return all;
}

describe.each(Object.keys(PACKINGS) as Packing[])(
  "a job whose target holds format '1' %s results",
  (packing) => {
    it.each([
      ['step', false],
      ['eventTime', true],
    ] as const)(
      'should restart from its last %s result and write what an uninterrupted run writes after it',
      async (name, eventTime) => {
        const stored = FIXTURE.jobs[packing][name];
        const broker = sourceBroker(later);
        // Written by the version before, in another process.
        const target = broker.target('target', { producer: 'p', connection: 'before' });
        for (const write of stored) {
          await target.publish(BigInt(write.publishingId), write.messages.map(bytesOf));
        }
        const storedCount = broker.messages('target').length;
        await run(broker, eventTime, PACKINGS[packing]);

        const whole = sourceBroker(later);
        await run(whole, eventTime, PACKINGS[packing]);
        const [resumed, uninterrupted] = [await readAll(broker), await readAll(whole)];
        expect(resumed.map(content)).toEqual(uninterrupted.map(content));
        // The stored results were kept, not written again, and the job went on after them.
        const formats = broker
          .messages('target')
          .map((m) => decodeMessage(m.bytes).applicationProperties?.['sw-format']);
        expect(formats.slice(0, storedCount)).toEqual(formats.slice(0, storedCount).map(() => '1'));
        expect(formats.length).toBeGreaterThan(storedCount);
        expect(new Set(formats.slice(storedCount))).toEqual(new Set(['2']));
        expect(resumed.length).toBeGreaterThan(stored.length);
      },
    );

    it('should be read by fromResults as a stage-2 source, old and new results alike', async () => {
      const broker = sourceBroker(later);
      const target = broker.target('target', { producer: 'p', connection: 'before' });
      for (const write of FIXTURE.jobs[packing].step) {
        await target.publish(BigInt(write.publishingId), write.messages.map(bytesOf));
      }
      await run(broker, false, PACKINGS[packing]);
      broker.createStream('totals');
      await aggregate(
        fromResults<number>(broker.source('target'), { late: 'skip', deadLetters: 'skip' }),
      )
        .count(1)
        .reduce((sum, o) => sum + o.value, 0)
        .to(broker.target('totals', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      const outputs = (await readAll(broker)).flatMap(({ result }) => result.outputs);
      const totals = broker
        .messages('totals')
        .flatMap((m) => decodeResult<number>(m.bytes).outputs.map((o) => o.value));
      expect(totals.length).toBeGreaterThan(0);
      expect(totals.reduce((a, b) => a + b, 0)).toBe(
        outputs.reduce((sum, o) => sum + (o.value as number), 0),
      );
    });
  },
);
