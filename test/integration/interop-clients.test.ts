// What an AMQP 1.0 client (rhea) and an AMQP 0-9-1 client (amqplib) receive of a job's
// target on the real broker, for every packing and for a user `encode`, reading from the
// first offset as another service would. The expected views are the README's table
// (test/support/clients/interop-contract.ts); the stock stream client's column is
// stock-client-view.test.ts's, except for `encode`, checked here.
import { decode as decodeMsgpack, decodeMulti } from '@msgpack/msgpack';
import { describe, expect, inject, it } from 'vitest';
import { dataSections, decodeMessage, encodeMessage } from '../../src/codecs/index.js';
import {
  decodeResult,
  type PackMode,
  type SingleFormat,
  type StepResult,
  type TargetOptions,
} from '../../src/index.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { PGlite } from '@electric-sql/pglite';
import { readWithAmqp091 } from '../../examples/readers/amqp091.js';
import { readWithAmqp10 } from '../../examples/readers/amqp10.js';
import {
  applyInOneTransaction,
  createTables,
  startingPoint,
} from '../../examples/readers/effectively-once.js';
import type { Apply, ResultMessage } from '../../examples/readers/result-message.js';
import { readWithStreamClient } from '../../examples/readers/stream-client.js';
import { encodeResult } from '../../src/result-format/result-format.js';
import {
  amqpEndpoint,
  readWithAmqplib,
  readWithRhea,
  type AmqpDelivery,
} from '../support/clients/amqp-clients.js';
import { publishInFrames } from '../support/results/shared-chunks.js';
import { INTEROP_CONTRACT, type Packing } from '../support/clients/interop-contract.js';
import { onRabbit } from '../support/results/job-chunks.js';
import { jobWrites, LAST_OFFSETS } from '../support/results/job-writes.js';
import { rabbitForTests } from '../support/brokers/rabbitmq.js';
import { stockForTests } from '../support/clients/stock-client.js';
import { bound } from '../support/timing.js';

const url = inject('rabbitmqUrl');
const real = rabbitForTests();
const stock = stockForTests();

/** A user's own format: the outputs as JSON `[key, value]` pairs. */
const encode = (result: StepResult<number>): Uint8Array =>
  new TextEncoder().encode(JSON.stringify(result.outputs.map((o) => [o.key, o.value])));

const OPTIONS: Readonly<Record<Packing, TargetOptions<number>>> = {
  sections: { pack: 'sections' },
  batch: { pack: 'batch' },
  'single msgpack': { pack: 'single', format: 'msgpack' },
  'single json': { pack: 'single', format: 'json' },
  encode: { encode },
};

/**
 * The job's writes on a new stream, the 3rd and 4th result sharing a chunk as pipelined
 * publishes often do (where the stock client loses batches); the messages written.
 */
async function targetOf(packing: Packing): Promise<{ stream: string; written: Uint8Array[] }> {
  const writes = await jobWrites(OPTIONS[packing]);
  const stream = await onRabbit(real, parseStreamUrl(url), writes);
  return { stream, written: writes.flatMap((w) => w.messages) };
}

/** What the written message says of itself, as both clients should show it. */
function asWritten(bytes: Uint8Array) {
  const message = decodeMessage(bytes);
  return {
    sections: dataSections(bytes).map((s) => Buffer.from(s)),
    contentType: message.properties?.contentType,
    properties: { ...(message.applicationProperties ?? {}) },
  };
}

const keysOf = (outputs: unknown[]) => outputs.map((o) => (o as { key: string }).key);

describe.each(Object.keys(INTEROP_CONTRACT) as Packing[])('the %s target', (packing) => {
  const contract = INTEROP_CONTRACT[packing];

  it(
    'should give rhea and amqplib every message at its real offset, as the contract says',
    { timeout: bound(180_000) },
    async () => {
      const { stream, written } = await targetOf(packing);
      const expected = written.map(asWritten);
      expect(written).toHaveLength(contract.amqp10.messages);
      expect(written).toHaveLength(contract.amqp091.messages);

      const viaRhea = await readWithRhea(url, stream, contract.amqp10.messages);
      const viaAmqplib = await readWithAmqplib(url, stream, contract.amqp091.messages);
      const offsets = written.map((_, i) => i);
      expect(viaRhea.map((d) => d.offset)).toEqual(offsets);
      expect(viaAmqplib.map((d) => d.offset)).toEqual(offsets);

      // AMQP 1.0 shows every data section; 0-9-1 one body, the sections run together.
      expect(viaRhea.map((d) => d.body)).toEqual(expected.map((e) => e.sections));
      expect(viaAmqplib.map((d) => d.body)).toEqual(
        expected.map((e) => [Buffer.concat(e.sections)]),
      );

      const contentTypes = (ds: AmqpDelivery[]) => [...new Set(ds.map((d) => d.contentType))];
      expect(contentTypes(viaRhea)).toEqual([contract.amqp10.contentType]);
      expect(contentTypes(viaAmqplib)).toEqual([contract.amqp091.contentType]);
      expect(viaRhea.map((d) => d.properties)).toEqual(expected.map((e) => e.properties));
      expect(viaAmqplib.map((d) => d.properties)).toEqual(expected.map((e) => e.properties));

      checkBodies(packing, viaRhea, viaAmqplib);
    },
  );
});

/** The contract's words on bodies: what a consumer decodes without our decoder. */
function checkBodies(packing: Packing, viaRhea: AmqpDelivery[], viaAmqplib: AmqpDelivery[]) {
  const perResult = LAST_OFFSETS.map(() => ['a', 'b', 'c']);
  const only = (d: AmqpDelivery) => {
    expect(d.body).toHaveLength(1);
    return d.body[0] as Buffer;
  };
  // The result format's metadata, readable without decoding a body (a user encode has none).
  const withMetadata = () => {
    for (const d of [...viaRhea, ...viaAmqplib]) {
      expect(Object.keys(d.properties)).toEqual(
        expect.arrayContaining(['sw-window-start', 'sw-window-end', 'sw-last-offset', 'sw-holds']),
      );
    }
  };
  switch (packing) {
    case 'sections':
      withMetadata();
      for (const d of [...viaRhea, ...viaAmqplib]) expect(d.properties['sw-holds']).toBe('output');
      expect(viaRhea.map((d) => keysOf(d.body.map((s) => decodeMsgpack(s))))).toEqual(perResult);
      expect(() => decodeMsgpack(only(viaAmqplib[0] as AmqpDelivery))).toThrow();
      expect(viaAmqplib.map((d) => keysOf([...decodeMulti(only(d))]))).toEqual(perResult);
      break;
    case 'batch':
      withMetadata();
      for (const view of [viaRhea, viaAmqplib]) {
        const outputs = view.map((d) => decodeMsgpack(only(d)) as { key: string; start: number });
        expect(outputs.map((o) => o.key)).toEqual(perResult.flat());
        // Each part routed by its properties alone: the section, its key, window and finality.
        expect(view.map((d) => d.properties)).toEqual(
          outputs.map((o) =>
            expect.objectContaining({
              'sw-holds': 'output',
              'sw-key': o.key,
              'sw-key-type': 'string',
              'sw-output-start': String(o.start),
              'sw-output-end': String(o.start + 60_000),
              'sw-final': 'true',
            }),
          ),
        );
      }
      break;
    case 'single msgpack':
    case 'single json': {
      withMetadata();
      const parse = (b: Buffer) =>
        (packing === 'single json'
          ? JSON.parse(b.toString('utf8'))
          : decodeMsgpack(b)) as unknown[];
      for (const view of [viaRhea, viaAmqplib]) {
        expect(view.map((d) => keysOf(parse(only(d))))).toEqual(perResult);
      }
      break;
    }
    case 'encode':
      for (const view of [viaRhea, viaAmqplib]) {
        expect(view.map((d) => d.properties)).toEqual(view.map(() => ({})));
        expect(JSON.parse(only(view[1] as AmqpDelivery).toString('utf8'))).toEqual([
          ['a', 3],
          ['b', 4],
          ['c', 5],
        ]);
      }
      break;
  }
}

describe('a user encode target read with the stock stream client', () => {
  it('should show each result body whole', { timeout: bound(180_000) }, async () => {
    const { stream } = await targetOf('encode');
    const bodies = await stock.consume(stream, INTEROP_CONTRACT.encode.stockMessages);
    expect(bodies.map((b) => (JSON.parse(b) as [string, number][]).map(([key]) => key))).toEqual(
      LAST_OFFSETS.map(() => ['a', 'b', 'c']),
    );
  });
});

describe('a result with late values and dead letters, read with rhea and amqplib', () => {
  const step: StepResult<number> = {
    firstOffset: 0n,
    lastOffset: 4n,
    messages: 5,
    window: { start: 0, end: 60_000 },
    outputs: [
      { key: 'a', count: 2, value: 3 },
      { key: 'b', count: 1, value: 4 },
    ],
    late: [{ sensor: 'a', value: 9 }],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [{ offset: 3n, stage: 'decode', error: 'bad', message: Uint8Array.of(1) }],
  };
  const metadata = { source: 'readings', producer: 'p', window: 'tumbling(1m)' };

  it.each(['single msgpack', 'single json', 'sections', 'batch'] as const)(
    'should show that a %s result holds them in sw-holds, without decoding a body',
    { timeout: bound(180_000) },
    async (packing) => {
      const { pack, format } = OPTIONS[packing] as { pack: PackMode; format?: SingleFormat };
      const messages = encodeResult(step, metadata, pack, format);
      const stream = await real.newStream('late-and-dead');
      await publishInFrames(parseStreamUrl(url), stream, [[{ publishingId: 4n, messages }]]);
      const holds = (ds: AmqpDelivery[]) =>
        ds.map((d) => [d.properties['sw-holds'], d.contentType]);
      const expected =
        packing === 'batch'
          ? ['output', 'output', 'late', 'dead-letters'].map((h) => [h, 'application/msgpack'])
          : [['output,late,dead-letters', contract(packing)]];
      expect(holds(await readWithRhea(url, stream, expected.length))).toEqual(expected);
      expect(holds(await readWithAmqplib(url, stream, expected.length))).toEqual(expected);
    },
  );
});

/** Fails after a minute, saying what had arrived (the wait for messages is never unbounded). */
const deadline = (got: () => string) =>
  new Promise<never>((_, reject) => {
    setTimeout(() => reject(new Error(`after 60 s: ${got()}`)), 60_000).unref();
  });

const contract = (packing: Packing) => INTEROP_CONTRACT[packing].amqp10.contentType;

describe('the example readers (examples/readers), as the reading guide shows them', () => {
  const { host, port } = amqpEndpoint(url);
  const { username, password } = parseStreamUrl(url);
  const READERS = {
    'AMQP 1.0 (rhea)': (stream: string, from: 'first' | bigint, apply: Apply) =>
      readWithAmqp10({ host, port, username, password }, stream, from, apply),
    'AMQP 0-9-1 (amqplib)': (stream: string, from: 'first' | bigint, apply: Apply) =>
      readWithAmqp091({ hostname: host, port, username, password }, stream, from, apply),
    'the stock stream client': (stream: string, from: 'first' | bigint, apply: Apply) =>
      readWithStreamClient(parseStreamUrl(url), stream, from, apply),
  };
  type ReaderName = keyof typeof READERS;

  /** What `reader` applies from `from` on: `count` messages, then nothing more for a second. */
  async function applied(name: ReaderName, stream: string, from: 'first' | bigint, count: number) {
    const got: ResultMessage[] = [];
    let enough: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (enough = resolve));
    const reader = await READERS[name](stream, from, (message) => {
      got.push(message);
      if (got.length === count) setTimeout(enough, 1_000);
      return Promise.resolve();
    });
    try {
      await Promise.race([all, reader.done, deadline(() => `${got.length} of ${count} messages`)]);
    } finally {
      await reader.close();
    }
    return got;
  }

  /** The written outputs, per message, as decodeResult reads them. */
  const outputsOf = (bytes: Uint8Array) =>
    decodeResult<number>(bytes).outputs.map(({ key, start, end, count, value }) => ({
      type: 'output',
      key,
      start,
      end,
      count,
      value,
    }));

  const CASES = (['single msgpack', 'single json', 'sections', 'batch'] as const).flatMap(
    (packing) => (Object.keys(READERS) as ReaderName[]).map((name) => [packing, name] as const),
  );

  it.each(CASES)(
    'should read a %s target with %s from the first offset, and from a stored one',
    { timeout: bound(180_000) },
    async (packing, name) => {
      const { stream, written } = await targetOf(packing);
      const refused =
        name === 'the stock stream client' && (packing === 'sections' || packing === 'batch');
      if (refused) {
        const failed = await applied(name, stream, 'first', written.length).catch(
          (e: unknown) => e,
        );
        expect(failed).toBeInstanceOf(Error);
        expect(String(failed)).toContain("use AMQP 1.0 or 0-9-1 for pack 'sections' and 'batch'");
        return;
      }
      const all = await applied(name, stream, 'first', written.length);
      expect(all.map((m) => m.offset)).toEqual(written.map((_, i) => BigInt(i)));
      expect(all.map((m) => m.sections)).toEqual(written.map(outputsOf));
      expect(all.map((m) => m.properties['sw-last-offset'])).toEqual(
        written.map((bytes) => String(decodeResult(bytes).lastOffset)),
      );
      // Resuming after the second message applied: from its offset + 1, nothing before it.
      const resumed = await applied(name, stream, 2n, written.length - 2);
      expect(resumed.map((m) => m.offset)).toEqual(written.slice(2).map((_, i) => BigInt(i + 2)));
    },
  );
});

describe('a reader keeping its own offset with its effects (examples/readers/effectively-once.ts)', () => {
  const { host, port } = amqpEndpoint(url);
  const { username, password } = parseStreamUrl(url);

  it(
    'should apply every output once across a crash, resuming from the offset it stored, on either AMQP protocol',
    { timeout: bound(180_000) },
    async () => {
      const { stream, written } = await targetOf('single msgpack');
      const db = await PGlite.create();
      await createTables(db);
      const apply = applyInOneTransaction(db, 'rollups-reader');

      // The first run dies while applying the third message: its transaction never commits.
      expect(await startingPoint(db, 'rollups-reader')).toBe('first');
      const first = await readWithAmqp091(
        { hostname: host, port, username, password },
        stream,
        'first',
        async (message) => {
          if (message.offset === 2n) throw new Error('crash');
          await apply(message);
        },
      );
      await expect(first.done).rejects.toThrow('crash');
      await first.close();

      // The next run, over AMQP 1.0 this time, starts at the stored offset.
      const from = await startingPoint(db, 'rollups-reader');
      expect(from).toBe(2n);
      let applied = 0;
      let all: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => (all = resolve));
      const second = await readWithAmqp10(
        { host, port, username, password },
        stream,
        from,
        async (m) => {
          await apply(m);
          if (++applied === written.length - 2) all();
        },
      );
      try {
        await Promise.race([
          finished,
          second.done,
          deadline(() => `${applied} of ${written.length - 2} messages`),
        ]);
      } finally {
        await second.close();
      }

      const expected = written
        .flatMap((bytes) => decodeResult<number>(bytes).outputs)
        .map((o) => ({ key: String(o.key), window_start: String(o.start), value: o.value }));
      const { rows } = await db.query(
        'SELECT key, window_start::text, value FROM totals ORDER BY window_start, key',
      );
      expect(rows).toEqual(expected);
      expect((await db.query('SELECT next_offset FROM reader_position')).rows).toEqual([
        { next_offset: String(written.length) },
      ]);
      await db.close();
    },
  );
});

describe('a result without any section (a flush of filtered messages only)', () => {
  const empty: StepResult<number> = {
    firstOffset: 0n,
    lastOffset: 1n,
    messages: 2,
    window: { start: 0, end: 60_000 },
    outputs: [],
    late: [],
    lateDropped: 0,
    filtered: 2,
    deadLetters: [],
  };
  const metadata = { source: 'readings', producer: 'p', window: 'tumbling(1m)' };
  const onNewStream = async (messages: Uint8Array[]) => {
    const stream = await real.newStream('empty-result');
    await publishInFrames(parseStreamUrl(url), stream, [[{ publishingId: 1n, messages }]]);
    return stream;
  };

  it.each(['single msgpack', 'sections', 'batch'] as const)(
    'should reach rhea and amqplib as one message holding none, when packed as %s',
    { timeout: bound(180_000) },
    async (packing) => {
      const { pack, format } = OPTIONS[packing] as { pack: PackMode; format?: SingleFormat };
      const stream = await onNewStream(encodeResult(empty, metadata, pack, format));
      const view = (ds: AmqpDelivery[]) =>
        ds.map((d) => [d.contentType, d.properties['sw-holds'], Buffer.concat(d.body).length]);
      const expected = [
        packing === 'single msgpack'
          ? ['application/msgpack', 'none', 1] // an empty msgpack array
          : ['application/msgpack-seq', 'none', 0],
      ];
      expect(view(await readWithRhea(url, stream, 1))).toEqual(expected);
      expect(view(await readWithAmqplib(url, stream, 1))).toEqual(expected);
    },
  );

  it('should fail an AMQP 1.0 reader as a message without a body, as format 1 wrote it', async () => {
    const [bytes] = encodeResult(empty, metadata, 'sections');
    const withoutBody = encodeMessage({ ...decodeMessage(bytes as Uint8Array), body: undefined });
    const stream = await onNewStream([withoutBody]);
    await expect(readWithRhea(url, stream, 1)).rejects.toThrow('msg_body_encoded');
  });
});
