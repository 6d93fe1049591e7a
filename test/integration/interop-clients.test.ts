// What an AMQP 1.0 client (rhea) and an AMQP 0-9-1 client (amqplib) receive of a job's
// target on the real broker, for every packing and for a user `encode`, reading from the
// first offset as another service would. The expected views are the README's table
// (test/support/interop-contract.ts); the stock stream client's column is
// stock-client-view.test.ts's, except for `encode`, checked here.
import { decode as decodeMsgpack, decodeMulti } from '@msgpack/msgpack';
import { describe, expect, inject, it } from 'vitest';
import { dataSections, decodeMessage } from '../../src/codecs/index.js';
import type { StepResult, TargetOptions } from '../../src/index.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { readWithAmqplib, readWithRhea, type AmqpDelivery } from '../support/amqp-clients.js';
import { INTEROP_CONTRACT, type Packing } from '../support/interop-contract.js';
import { onRabbit } from '../support/job-chunks.js';
import { jobWrites, LAST_OFFSETS } from '../support/job-writes.js';
import { rabbitForTests } from '../support/rabbitmq.js';
import { stockForTests } from '../support/stock-client.js';

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
    { timeout: 180_000 },
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
        expect.arrayContaining(['sw-window-start', 'sw-window-end', 'sw-last-offset']),
      );
    }
  };
  switch (packing) {
    case 'sections':
      withMetadata();
      expect(viaRhea.map((d) => keysOf(d.body.map((s) => decodeMsgpack(s))))).toEqual(perResult);
      expect(() => decodeMsgpack(only(viaAmqplib[0] as AmqpDelivery))).toThrow();
      expect(viaAmqplib.map((d) => keysOf([...decodeMulti(only(d))]))).toEqual(perResult);
      break;
    case 'batch':
      withMetadata();
      for (const view of [viaRhea, viaAmqplib]) {
        expect(view.map((d) => (decodeMsgpack(only(d)) as { key: string }).key)).toEqual(
          perResult.flat(),
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
  it('should show each result body whole', { timeout: 180_000 }, async () => {
    const { stream } = await targetOf('encode');
    const bodies = await stock.consume(stream, INTEROP_CONTRACT.encode.stockMessages);
    expect(bodies.map((b) => (JSON.parse(b) as [string, number][]).map(([key]) => key))).toEqual(
      LAST_OFFSETS.map(() => ['a', 'b', 'c']),
    );
  });
});
