// What an AMQP 1.0 client (rhea) and an AMQP 0-9-1 client (amqplib) receive of a job's
// target on the real broker, for every packing and for a user `encode`, reading from the
// first offset as another service would. The expected views are the README's table
// (test/support/clients/interop-contract.ts); the stock stream client's column is
// stock-client-view.test.ts's, except for `encode`, checked here. Steps of several writes
// (a job whose connection has a small frame_max) are read by rhea, amqplib and the stock
// client, each step put together from its messages' properties alone
// (docs/reference/wire-format.md#steps-of-several-writes), as readResults gives it; so do the
// example readers (examples/readers), which also say where to read on after each step and,
// with effectively-once.ts, apply every step once across a crash.
import { decode as decodeMsgpack, decodeMulti } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Offset } from 'rabbitmq-stream-js-client';
import { dataSections, decodeMessage, encodeMessage } from '../../src/codecs/index.js';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  lastWriteId,
  writeId,
  readResults,
  type PackMode,
  type SingleFormat,
  type StepResult,
  type TargetOptions,
} from '../../src/index.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { PGlite } from '@electric-sql/pglite';
import { readWithAmqp091 } from '../../examples/readers/amqp091.js';
import { readWithAmqp10 } from '../../examples/readers/amqp10.js';
import {
  applyInOneTransaction,
  createTables,
  startingPoint,
  type Database,
} from '../../examples/readers/effectively-once.js';
import type {
  Apply,
  OutputSection,
  ResultMessage,
  ResultStep,
} from '../../examples/readers/result-message.js';
import { readWithStreamClient } from '../../examples/readers/stream-client.js';
import { encodeResult } from '../../src/result-format/result-encoder.js';
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
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { T0 } from '../support/jobs/memory-job.js';
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

const { host: amqpHost, port: amqpPort } = amqpEndpoint(url);
const { username, password } = parseStreamUrl(url);

/** The example readers (examples/readers), each reading `stream` from `from`, step by step. */
const READERS = {
  'AMQP 1.0 (rhea)': (stream: string, from: 'first' | bigint, apply: Apply) =>
    readWithAmqp10({ host: amqpHost, port: amqpPort, username, password }, stream, from, apply),
  'AMQP 0-9-1 (amqplib)': (stream: string, from: 'first' | bigint, apply: Apply) =>
    readWithAmqp091(
      { hostname: amqpHost, port: amqpPort, username, password },
      stream,
      from,
      apply,
    ),
  'the stock stream client': (stream: string, from: 'first' | bigint, apply: Apply) =>
    readWithStreamClient(parseStreamUrl(url), stream, from, apply),
};
type ReaderName = keyof typeof READERS;

/** The steps an example reader applies from `from` on: `count`, then nothing more for a second. */
async function applied(name: ReaderName, stream: string, from: 'first' | bigint, count: number) {
  const got: ResultStep[] = [];
  let enough: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (enough = resolve));
  const reader = await READERS[name](stream, from, (step) => {
    got.push(step);
    if (got.length === count) setTimeout(enough, 1_000);
    return Promise.resolve();
  });
  try {
    await Promise.race([all, reader.done, deadline(() => `${got.length} of ${count} steps`)]);
  } finally {
    await reader.close();
  }
  return got;
}

/** A whole step: who wrote it, where it lies, what it holds, where to read on after it. */
interface WholeStep {
  readonly producer: string;
  readonly lastOffset: bigint;
  readonly offset: bigint;
  readonly next: bigint;
  readonly outputs: readonly unknown[];
  readonly resumeFrom: bigint;
}

/** A step as an example reader hands it on. */
const asWhole = (step: ResultStep): WholeStep => ({
  producer: step.producer,
  lastOffset: step.lastOffset,
  offset: step.offset,
  next: (step.messages.at(-1) as ResultMessage).offset + 1n,
  outputs: step.sections.map((section) => {
    const { type, key, start, end, count, value } = section as OutputSection;
    return { type, key, start, end, count, value };
  }),
  resumeFrom: step.resumeFrom,
});

/**
 * The steps readResults gives from `from`, with where to read on after each as the wire
 * format says (docs/reference/wire-format.md, "Where to read on"): after its last message, or
 * at the first message of another producer's step still open then (one that readResults gives
 * later but that began before this one's end).
 */
async function wholeSteps(stream: string, from: 'first' | bigint = 'first') {
  const read: Omit<WholeStep, 'resumeFrom'>[] = [];
  for await (const { offset, next, result } of readResults<number>(real.rabbit.source(stream), {
    from,
    untilCaughtUp: true,
  })) {
    read.push({
      producer: result.producer,
      lastOffset: result.lastOffset,
      offset,
      next,
      outputs: result.outputs.map(({ key, start, end, count, value }) => ({
        type: 'output',
        key,
        start,
        end,
        count,
        value,
      })),
    });
  }
  return read.map((step, i): WholeStep => ({
    ...step,
    resumeFrom: read
      .slice(i + 1)
      .filter((later) => later.offset < step.next)
      .reduce((at, later) => (later.offset < at ? later.offset : at), step.next),
  }));
}

describe('the example readers (examples/readers), as the reading guide shows them', () => {
  const CASES = (['single msgpack', 'single json', 'sections', 'batch'] as const).flatMap(
    (packing) => (Object.keys(READERS) as ReaderName[]).map((name) => [packing, name] as const),
  );

  it.each(CASES)(
    'should read a %s target with %s step by step from the first offset, from a stored position and from inside a step',
    { timeout: bound(180_000) },
    async (packing, name) => {
      const { stream } = await targetOf(packing);
      const refused =
        name === 'the stock stream client' && (packing === 'sections' || packing === 'batch');
      if (refused) {
        const failed = await applied(name, stream, 'first', LAST_OFFSETS.length).catch(
          (e: unknown) => e,
        );
        expect(failed).toBeInstanceOf(Error);
        expect(String(failed)).toContain("use AMQP 1.0 or 0-9-1 for pack 'sections' and 'batch'");
        return;
      }
      // Every step whole ('batch': its three parts), as readResults gives it; one producer,
      // so where to read on is after each step's last message.
      const expected = await wholeSteps(stream);
      expect(expected.map((s) => String(s.lastOffset))).toEqual(LAST_OFFSETS);
      expect(expected.map((s) => s.resumeFrom)).toEqual(expected.map((s) => s.next));
      const all = await applied(name, stream, 'first', expected.length);
      expect(all.map(asWhole)).toEqual(expected);
      // Resuming from the position stored with the second step: the steps after it.
      const resumed = await applied(name, stream, expected[1]?.resumeFrom as bigint, 3);
      expect(resumed.map(asWhole)).toEqual(expected.slice(2));
      // From offset 2 ('batch': the first step's last part, passed over), as readResults does.
      const inside = await wholeSteps(stream, 2n);
      expect(inside).toEqual(expected.filter((s) => s.offset >= 2n));
      expect((await applied(name, stream, 2n, inside.length)).map(asWhole)).toEqual(inside);
    },
  );
});

describe('a reader keeping its own offset with its effects (examples/readers/effectively-once.ts)', () => {
  it(
    'should apply every output once across a crash, resuming from the position it stored, on either AMQP protocol',
    { timeout: bound(180_000) },
    async () => {
      const { stream, written } = await targetOf('single msgpack');
      const db = await PGlite.create();
      await createTables(db);
      const apply = applyInOneTransaction(db, 'rollups-reader');

      // The first run dies while applying the third step: its transaction never commits.
      expect(await startingPoint(db, 'rollups-reader')).toBe('first');
      const first = await READERS['AMQP 0-9-1 (amqplib)'](stream, 'first', async (step) => {
        if (step.offset === 2n) throw new Error('crash');
        await apply(step);
      });
      await expect(first.done).rejects.toThrow('crash');
      await first.close();

      // The next run, over AMQP 1.0 this time, starts at the stored position.
      const from = await startingPoint(db, 'rollups-reader');
      expect(from).toBe(2n);
      await untilApplied('AMQP 1.0 (rhea)', stream, from, written.length - 2, apply);

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

/** Reads with `name` from `from`, applying each step with `apply`, until `count` steps were. */
async function untilApplied(
  name: ReaderName,
  stream: string,
  from: 'first' | bigint,
  count: number,
  apply: Apply,
): Promise<ResultStep[]> {
  const handed: ResultStep[] = [];
  let all: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (all = resolve));
  const reader = await READERS[name](stream, from, async (step) => {
    handed.push(step);
    await apply(step);
    if (handed.length === count) all();
  });
  try {
    await Promise.race([
      finished,
      reader.done,
      deadline(() => `${handed.length} of ${count} steps`),
    ]);
  } finally {
    await reader.close();
  }
  return handed;
}

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

describe('steps of several writes, reassembled by every client from the properties alone', () => {
  // The job's connection negotiates a frame_max of 8 KiB (the broker's is 1 MiB), so each
  // step of 300 outputs takes several writes; the readers connect as usual.
  const FRAME_MAX = 8_192;
  const KEYS = 300;
  let small: RabbitMQ | undefined;
  beforeAll(async () => {
    small = await connect({ ...parseStreamUrl(url), frameMax: FRAME_MAX });
  });
  afterAll(async () => {
    await small?.close();
  });

  /** Minutes 0..3 of KEYS keys each: three steps of KEYS outputs (the 4th minute stays open). */
  const readings = Array.from({ length: 4 * KEYS }, (_, i) =>
    jsonMessage(
      { sensor: `k${String(i % KEYS)}`, value: i },
      { creationTime: T0 + Math.floor(i / KEYS) * 60_000 + 1_000 },
    ),
  );

  /**
   * Two producers' jobs on one source, writing one target at once (their writes may come
   * between each other's parts): the target and every message on it.
   */
  async function twoJobs(packing: Packing): Promise<{ stream: string; count: number }> {
    const rabbit = small as RabbitMQ;
    const source = await real.newStream('steps-source');
    const stream = await real.newStream('steps-target');
    await publishAll(real.rabbit, source, readings);
    const job = (producer: string) => {
      const target = rabbit.target(stream, { producer });
      // A precondition, not what the test checks: a step of KEYS outputs cannot fit one write.
      expect(target.maxWriteBytes).toBeLessThan(FRAME_MAX);
      return aggregate<{ sensor: string; value: number }>(rabbit.source(source))
        .tumbling('1m')
        .key((r) => r.sensor)
        .reduce((total, r) => total + r.value, 0)
        .to(target, OPTIONS[packing])
        .run({ untilCaughtUp: true });
    };
    await Promise.all([job('p'), job('q')]);
    return { stream, count: (await readAll(real.rabbit, stream)).length };
  }

  /** One message as a client saw it: its offset, properties and sections, decoded. */
  interface Seen {
    readonly offset: number;
    readonly properties: Readonly<Record<string, unknown>>;
    readonly sections: readonly unknown[];
  }

  /** The sections of a message body, decoded as the content type says, without our decoder. */
  function sectionsOf(packing: Packing, body: readonly Buffer[]): unknown[] {
    const [first] = body;
    switch (packing) {
      case 'single msgpack':
        return decodeMsgpack(first as Buffer) as unknown[];
      case 'single json':
        return JSON.parse((first as Buffer).toString('utf8')) as unknown[];
      case 'sections':
        // AMQP 1.0: one data section per section; 0-9-1: one body, the maps run together.
        return body.flatMap((section) => [...decodeMulti(section)]);
      default:
        expect(body).toHaveLength(1);
        return [decodeMsgpack(first as Buffer)];
    }
  }

  /** A step put together from its messages: who wrote it, where, and what it holds. */
  interface Step {
    readonly producer: unknown;
    readonly lastOffset: unknown;
    readonly offset: number;
    readonly next: number;
    readonly outputs: unknown[];
  }

  /**
   * Steps from messages in offset order, by their properties only: the parts of one step share
   * sw-producer and sw-last-offset, come in sw-part order, and the step is whole at part
   * sw-parts - 1. Every step here takes several writes, so every message has sw-part (a step
   * of one message, without it, fails here). Also checks what the parts say of the step's
   * writes: each names its write's id (sw-write-id), the last one 2^62 + last offset · 2^16 +
   * 65535, and the producer's write before the step (sw-previous).
   */
  function reassemble(seen: readonly Seen[]): Step[] {
    const open = new Map<string, Seen[]>();
    const lastWrite = new Map<unknown, string>();
    const steps: Step[] = [];
    for (const message of seen) {
      const p = message.properties;
      const step = `${String(p['sw-producer'])} ${String(p['sw-last-offset'])}`;
      const parts = open.get(step) ?? [];
      expect(p['sw-part']).toBe(String(parts.length));
      parts.push(message);
      if (Number(p['sw-part']) < Number(p['sw-parts']) - 1) {
        open.set(step, parts);
        continue;
      }
      open.delete(step);
      // Several writes, in order: write w of n has id 2^62 + last offset · 2^16 + w, the
      // last one 65535 ('batch' writes several messages under one id).
      const writeIds = parts.map((m) => BigInt(m.properties['sw-write-id'] as string));
      const writes = [...new Set(writeIds)];
      expect(writes.length).toBeGreaterThan(1);
      const lastOffset = BigInt(p['sw-last-offset'] as string);
      const idOf = (w: number) =>
        (1n << 62n) + lastOffset * 65_536n + (w === writes.length - 1 ? 65_535n : BigInt(w));
      expect(writes).toEqual(writes.map((_, w) => idOf(w)));
      expect(writes).toEqual(writes.map((_, w) => writeId(lastOffset, w, writes.length)));
      expect([...writeIds].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))).toEqual(writeIds);
      // Every part names the producer's write before the step: its previous step's last.
      expect(parts.map((m) => m.properties['sw-previous'])).toEqual(
        parts.map(() => lastWrite.get(p['sw-producer'])),
      );
      lastWrite.set(p['sw-producer'], String(lastWriteId(lastOffset)));
      const outputs = parts.flatMap((m) => m.sections);
      expect(outputs).toHaveLength(Number(p['sw-outputs']));
      steps.push({
        producer: p['sw-producer'],
        lastOffset: p['sw-last-offset'],
        offset: (parts[0] as Seen).offset,
        next: message.offset + 1,
        outputs: outputs.map((o) => {
          const { key, start, end, count, value } = o as Record<string, unknown>;
          return { key, start, end, count, value };
        }),
      });
    }
    expect([...open.keys()]).toEqual([]);
    return steps;
  }

  /** The steps as readResults gives them. */
  async function fromReadResults(stream: string): Promise<Step[]> {
    const steps: Step[] = [];
    for await (const { offset, next, result } of readResults<number>(real.rabbit.source(stream), {
      untilCaughtUp: true,
    })) {
      steps.push({
        producer: result.producer,
        lastOffset: String(result.lastOffset),
        offset: Number(offset),
        next: Number(next),
        outputs: result.outputs.map(({ key, start, end, count, value }) => ({
          key,
          start,
          end,
          count,
          value,
        })),
      });
    }
    return steps;
  }

  /** Every message of `stream` with the stock client: plain messages only ('single'). */
  async function readWithStock(stream: string, count: number) {
    const received: AmqpDelivery[] = [];
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    const consumer = await stock.client.declareConsumer(
      { stream, offset: Offset.first() },
      (message) => {
        received.push({
          offset: Number(message.offset),
          body: [message.content],
          contentType: message.messageProperties?.contentType,
          properties: message.applicationProperties ?? {},
        });
        if (received.length === count) done();
      },
    );
    try {
      await Promise.race([all, deadline(() => `${received.length} of ${count} messages`)]);
    } finally {
      await consumer.close();
    }
    return received;
  }

  /** `messages` on a new stream, one plain write each. */
  async function rewritten(name: string, messages: readonly Uint8Array[]) {
    const writes = messages.map((m, i) => ({ publishingId: BigInt(i + 1), messages: [m] }));
    const target = await real.newStream(name);
    const frames = Array.from({ length: Math.ceil(writes.length / 50) }, (_, i) =>
      writes.slice(50 * i, 50 * i + 50),
    );
    await publishInFrames(parseStreamUrl(url), target, frames);
    return { stream: target, count: writes.length };
  }

  /** The messages of `stream` written by `producer`, in order. */
  const messagesOf = async (stream: string, producer: string) =>
    (await readAll(real.rabbit, stream)).filter(
      (m) => decodeMessage(m).applicationProperties?.['sw-producer'] === producer,
    );

  /**
   * The job's messages on a new stream, one producer's and the other's in turn, one plain
   * write each: every step's parts have the other producer's between them, at the same
   * sw-last-offset (both jobs read one source), so only sw-producer tells them apart.
   */
  async function interleaved(stream: string): Promise<{ stream: string; count: number }> {
    const [p, q] = [await messagesOf(stream, 'p'), await messagesOf(stream, 'q')];
    const turns = p.flatMap((m, i) => [m, q[i]]).concat(q.slice(p.length));
    return rewritten(
      'steps-interleaved',
      turns.filter((m) => m !== undefined),
    );
  }

  /**
   * The job's messages on a new stream, each of q's steps whole between the first and the
   * second part of p's step of the same minute: q's step is whole while p's is open, so where
   * to read on after q's step is p's first part, and a reader resuming there reads q's again.
   */
  async function nested(stream: string): Promise<{ stream: string; count: number }> {
    /** A producer's messages, by step (its steps' messages are consecutive). */
    const steps = async (producer: string) => {
      const byStep = new Map<unknown, Uint8Array[]>();
      for (const m of await messagesOf(stream, producer)) {
        const step = decodeMessage(m).applicationProperties?.['sw-last-offset'];
        byStep.set(step, [...(byStep.get(step) ?? []), m]);
      }
      return [...byStep.values()];
    };
    const [p, q] = [await steps('p'), await steps('q')];
    expect(p).toHaveLength(q.length);
    return rewritten(
      'steps-nested',
      p.flatMap(([first, ...rest], i) => [first as Uint8Array, ...(q[i] ?? []), ...rest]),
    );
  }

  /** Per packing, the target as the two jobs wrote it and the same messages rearranged. */
  const targets = new Map<Packing, ReturnType<typeof writeTargets>>();
  async function writeTargets(packing: Packing) {
    const written = await twoJobs(packing);
    return {
      written,
      mixed: await interleaved(written.stream),
      nested: await nested(written.stream),
    };
  }
  const targetsOf = (packing: Packing) => {
    const known = targets.get(packing) ?? writeTargets(packing);
    targets.set(packing, known);
    return known;
  };

  /** What `packing`'s target gives each client, reassembled: what readResults gives. */
  async function everyClientReads(packing: Packing, stream: string, count: number) {
    const expected = await fromReadResults(stream);
    const seen = (ds: AmqpDelivery[]): Seen[] =>
      ds.map((d) => ({
        offset: d.offset,
        properties: d.properties,
        sections: sectionsOf(packing, d.body),
      }));
    expect(reassemble(seen(await readWithRhea(url, stream, count)))).toEqual(expected);
    expect(reassemble(seen(await readWithAmqplib(url, stream, count)))).toEqual(expected);
    // The stock client keeps only the last data section of a message, and loses the sub-entry
    // batches sharing a chunk (the interop table): 'single' only.
    if (packing === 'single msgpack' || packing === 'single json') {
      expect(reassemble(seen(await readWithStock(stream, count)))).toEqual(expected);
    }
    return expected;
  }

  /** Steps of another producer whose messages lie between the first and last of `steps`'s. */
  const overlapping = (steps: readonly Step[]) =>
    steps.filter((a) =>
      steps.some((b) => b.producer !== a.producer && b.offset < a.next && a.offset < b.next),
    );

  /** The steps without where they lie, in producer and offset order. */
  const held = (steps: readonly Step[]) =>
    steps
      .map(({ producer, lastOffset, outputs }) => ({ producer, lastOffset, outputs }))
      .sort((a, b) =>
        `${String(a.producer)} ${String(a.lastOffset).padStart(8)}`.localeCompare(
          `${String(b.producer)} ${String(b.lastOffset).padStart(8)}`,
        ),
      );

  it.each(['single msgpack', 'single json', 'sections', 'batch'] as const)(
    'should give rhea, amqplib and (for single) the stock client exactly the steps readResults gives, packed as %s',
    { timeout: bound(180_000) },
    async (packing) => {
      // As two jobs wrote it, their writes coming between each other's as they happened to.
      const { written, mixed } = await targetsOf(packing);
      const steps = await everyClientReads(packing, written.stream, written.count);
      // Three steps of KEYS outputs per producer, each of several writes (reassemble checks).
      expect(steps.map((s) => [s.producer, s.outputs.length]).sort()).toEqual(
        ['p', 'p', 'p', 'q', 'q', 'q'].map((producer) => [producer, KEYS]),
      );

      // The same messages, the producers' taking turns.
      const mixedSteps = await everyClientReads(packing, mixed.stream, mixed.count);
      expect(overlapping(mixedSteps)).toHaveLength(6);
      expect(held(mixedSteps)).toEqual(held(steps));
    },
  );

  const EXAMPLES = (['single msgpack', 'single json', 'sections', 'batch'] as const).flatMap(
    (packing) =>
      (Object.keys(READERS) as ReaderName[])
        .filter((name) => name !== 'the stock stream client' || packing.startsWith('single'))
        .map((name) => [packing, name] as const),
  );

  it.each(EXAMPLES)(
    'should hand the example reader of a %s target over %s whole steps only, as readResults gives them, with where to read on after each',
    { timeout: bound(180_000) },
    async (packing, name) => {
      const { written, mixed, nested: inside } = await targetsOf(packing);
      for (const { stream } of [written, mixed, inside]) {
        const expected = await wholeSteps(stream);
        expect(expected).toHaveLength(6);
        expect((await applied(name, stream, 'first', expected.length)).map(asWhole)).toEqual(
          expected,
        );
      }
      // Where another producer's step is still open, where to read on is its first part.
      const open = (await wholeSteps(inside.stream)).filter((s) => s.resumeFrom < s.next);
      expect(open.map((s) => s.producer)).toEqual(['q', 'q', 'q']);
    },
  );

  it(
    'should have the effectively-once example apply every step of two producers once across a crash, resuming at a step still open',
    { timeout: bound(180_000) },
    async () => {
      const { nested: target } = await targetsOf('single msgpack');
      const { stream } = target;
      const steps = await wholeSteps(stream);
      // q's second step is whole while p's is open: its position is p's first part. The crash
      // comes at p's step, right after; the restart must read p's step from its first part,
      // and q's step again (skipped: applied already).
      const [, , q1, p1] = steps as [WholeStep, WholeStep, WholeStep, WholeStep];
      expect(steps.map((s) => s.producer)).toEqual(['q', 'p', 'q', 'p', 'q', 'p']);
      expect(q1.resumeFrom).toBe(p1.offset);
      expect(q1.offset).toBeGreaterThan(p1.offset);
      expect(q1.next).toBeLessThan(p1.next);

      const db = await PGlite.create();
      await createTables(db);
      // The outputs each committed transaction inserted into `totals`.
      const inserted: string[] = [];
      const watched: Database = {
        query: (sql, params) => db.query(sql, params),
        transaction: async (work) => {
          const rows: string[] = [];
          const result = await db.transaction((tx) =>
            work({
              query: (sql, params) => {
                if (sql.includes('INSERT INTO totals')) rows.push(JSON.stringify(params));
                return tx.query(sql, params);
              },
            }),
          );
          inserted.push(...rows);
          return result;
        },
      };
      const apply = applyInOneTransaction(watched, 'two-producers');

      const first = await READERS['AMQP 0-9-1 (amqplib)'](stream, 'first', async (step) => {
        if (step.offset === p1.offset) throw new Error('crash');
        await apply(step);
      });
      await expect(first.done).rejects.toThrow('crash');
      await first.close();
      expect(inserted).toHaveLength(3 * KEYS);

      const from = await startingPoint(watched, 'two-producers');
      expect(from).toBe(p1.offset);
      const again = await untilApplied('AMQP 1.0 (rhea)', stream, from, 4, apply);
      expect(again.map(asWhole)).toEqual(steps.slice(2));

      // Every output of every step inserted once, q's second step not twice.
      const outputs = steps.flatMap((s) =>
        s.outputs.map((o) => {
          const { key, start, value } = o as OutputSection;
          return JSON.stringify([String(key), start, value, false]);
        }),
      );
      expect(inserted.sort()).toEqual(outputs.sort());
      expect((await watched.query('SELECT next_offset FROM reader_position')).rows).toEqual([
        { next_offset: String(target.count) },
      ]);
      await db.close();
    },
  );
});
