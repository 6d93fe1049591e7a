// A small fixture for tests of one job on the embedded broker.
import {
  aggregate,
  decodeResult,
  jsonMessage,
  type Aggregator,
  type DecodedResult,
  type Target,
} from '../../../src/index.js';
import { decodeMessage } from '../../../src/codecs/amqp-message.js';
import { MemoryBroker } from '../../../src/memory/index.js';

export interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

export const T0 = Date.UTC(2026, 0, 1);

/** The total of a key's readings, as an object (a result value with a field, as users write). */
export const totalOfReadings: Aggregator<Reading, { total: number }, { total: number }> = {
  init: () => ({ total: 0 }),
  add: (acc, r) => ({ total: acc.total + r.value }),
  result: (acc) => acc,
};

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

/** A 'source' with one reading of 'a' per chunk at offsets 0..count-1 (value = offset), and an empty 'target'. */
export function brokerWithCountedReadings(count: number): MemoryBroker {
  const memory = new MemoryBroker({ now: () => T0 });
  memory.createStream('source');
  memory.createStream('target');
  for (let i = 0; i < count; i++) memory.append('source', [jsonMessage(reading('a', i, i))]);
  return memory;
}

/** One result per source message, its value's sum, written to `target` ('target' as 'p' by default). */
export const countJob = (
  memory: MemoryBroker,
  target: Target = memory.target('target', { producer: 'p' }),
) =>
  aggregate<Reading>(memory.source('source'))
    .count(1)
    .reduce((sum, r) => sum + r.value, 0)
    .to(target, { retryDelayMs: 0 });

/**
 * Stores on a `brokerWithCountedReadings` broker's 'target', as producer 'p', `countJob`'s
 * result for offset 0 as a version before steps could span writes published it: the same
 * bytes (a step of one write is written as before), under its offset as publishing id, 0,
 * which there also meant "never published". Returns the message stored.
 */
export async function publishOffsetZeroAsEarlierVersion(memory: MemoryBroker): Promise<Uint8Array> {
  const scratch = brokerWithCountedReadings(1);
  await countJob(scratch).run({ untilCaughtUp: true });
  const [message] = scratch.messages('target');
  if (message === undefined) throw new Error('countJob publishes a result for offset 0');
  const earlier = memory.target('target', { producer: 'p' });
  await earlier.publish(0n, [message.bytes]);
  await earlier.release(); // that process is gone: the job declares the name again
  return message.bytes;
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
