// Helpers for tests against the real broker started by test/integration/global-setup.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, inject } from 'vitest';
import type { SourceChunk } from '../../../src/index.js';
import { connect, type RabbitMQ } from '../../../src/rabbitmq/connection.js';

/** A test file's connection to the broker, and the streams it made, deleted when it ends. */
export interface RabbitForTests {
  /** The connection; set in beforeAll, so read it inside tests and hooks only. */
  readonly rabbit: RabbitMQ;
  /** Creates a stream named `prefix-<random>`, deleted when the file's tests are done. */
  newStream(prefix: string, options?: Parameters<RabbitMQ['createStream']>[1]): Promise<string>;
  /** Deletes `stream`, made some other way, when the file's tests are done; returns it. */
  track(stream: string): string;
}

/**
 * Connects in beforeAll and, in afterAll, deletes every stream made or tracked, then closes.
 * Call it at a file's top level, before the file's own hooks: they run after the connect
 * and their afterAll before the close (vitest runs after-hooks in reverse order).
 */
export function rabbitForTests(): RabbitForTests {
  let connection: RabbitMQ | undefined;
  const streams: string[] = [];
  beforeAll(async () => {
    connection = await connect(inject('rabbitmqUrl'));
  });
  afterAll(async () => {
    if (connection === undefined) return;
    for (const stream of streams) await connection.deleteStream(stream);
    await connection.close();
  });
  const live: RabbitForTests = {
    get rabbit() {
      if (connection === undefined) throw new Error('rabbitForTests: not connected yet');
      return connection;
    },
    async newStream(prefix, options = {}) {
      const stream = uniqueStream(prefix);
      await live.rabbit.createStream(stream, options);
      return live.track(stream);
    },
    track(stream) {
      streams.push(stream);
      return stream;
    },
  };
  return live;
}

/** A stream name no other test or run uses. */
export function uniqueStream(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * Writes `chunks` of messages to `stream` in order, one publish per message under a feeder
 * producer, pipelined (the target keeps them in order and bounds what is in flight).
 */
export async function publishAll(
  broker: RabbitMQ,
  stream: string,
  messages: readonly Uint8Array[],
): Promise<void> {
  const feeder = broker.target(stream, { producer: `feeder-${randomUUID()}` });
  try {
    let id = 0n;
    const pending: Promise<void>[] = [];
    for (const message of messages) pending.push(feeder.publish(id++, [message]));
    await Promise.all(pending);
  } finally {
    await feeder.close();
  }
}

/**
 * Creates `source` holding `messages` (see publishAll) and an empty `target`, runs `job`, and
 * returns what `target` then holds, as bytes; deletes both streams however `job` ends.
 */
export async function targetAfterJob(
  broker: RabbitMQ,
  { source, target }: { source: string; target: string },
  messages: readonly Uint8Array[],
  job: () => Promise<void>,
): Promise<Buffer[]> {
  await broker.createStream(source);
  await broker.createStream(target);
  try {
    await publishAll(broker, source, messages);
    await job();
    return (await readAll(broker, target)).map((bytes) => Buffer.from(bytes));
  } finally {
    await broker.deleteStream(source);
    await broker.deleteStream(target);
  }
}

/** Every message of `stream` currently stored, as raw bytes, read with our source. */
export async function readAll(broker: RabbitMQ, stream: string): Promise<Uint8Array[]> {
  const source = broker.source(stream);
  const end = await source.endOffset();
  const messages: Uint8Array[] = [];
  if (end === 0n) return messages;
  const controller = new AbortController();
  for await (const chunk of source.read(0n, controller.signal)) {
    messages.push(...messagesOf([chunk]));
    if (chunk.firstOffset + BigInt(chunk.count) >= end) break;
  }
  controller.abort();
  return messages;
}

/** The messages of `chunks`, copied out, in offset order. */
export function messagesOf(chunks: readonly SourceChunk[]): Buffer[] {
  return chunks.flatMap((chunk) =>
    Array.from({ length: chunk.count }, (_, i) =>
      Buffer.from(chunk.bytes.subarray(chunk.starts[i], chunk.ends[i])),
    ),
  );
}

/** The offsets of the messages of `chunks`. */
export function offsetsOf(chunks: readonly SourceChunk[]): bigint[] {
  return chunks.flatMap((chunk) =>
    Array.from({ length: chunk.count }, (_, i) => chunk.firstOffset + BigInt(i)),
  );
}
