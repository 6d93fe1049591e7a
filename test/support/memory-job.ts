// A small fixture for tests of one job on the embedded broker.
import { decodeResult, jsonMessage, type DecodedResult } from '../../src/index.js';
import { decodeMessage } from '../../src/codecs/amqp-message.js';
import { MemoryBroker } from '../../src/memory/index.js';

export interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

export const T0 = Date.UTC(2026, 0, 1);

/** A broker with a 'source' stream holding `readings` (as JSON, creation time = t) and a 'target'. */
export function brokerWithReadings(
  readings: readonly Reading[],
  options: { chunkSize?: number } = {},
): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('source');
  broker.createStream('target');
  const size = options.chunkSize ?? 3;
  for (let i = 0; i < readings.length; i += size) {
    const chunk = readings.slice(i, i + size).map((r) => jsonMessage(r, { creationTime: r.t }));
    broker.append('source', chunk, { timestamp: T0 });
  }
  return broker;
}

export function results(broker: MemoryBroker, stream = 'target'): DecodedResult[] {
  return broker.messages(stream).map((m) => decodeResult(m.bytes));
}

export const reading = (sensor: string, value: number, seconds: number): Reading => ({
  sensor,
  value,
  t: T0 + seconds * 1000,
});

/** Each write of a target of user messages: its publishing id and the bodies it holds. */
export function userWrites(
  broker: MemoryBroker,
  stream = 'target',
): { publishingId: bigint | undefined; bodies: string[] }[] {
  return broker.chunks(stream).map((chunk) => ({
    publishingId: chunk.writer?.publishingId,
    bodies: chunk.messages.map((m) => {
      const body = decodeMessage(m.bytes).body;
      if (body?.type !== 'data' || body.sections.length !== 1) {
        throw new Error('a user message has one data section');
      }
      return Buffer.from(body.sections[0] as Uint8Array).toString('utf8');
    }),
  }));
}
