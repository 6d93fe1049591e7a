// The two brokers the demos run on: the embedded one (default) and a real RabbitMQ
// (STREAM_WINDOWS_BROKER=rabbitmq, at RABBITMQ_STREAM_URL or the local one that
// scripts/rabbitmq.sh starts).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { PartitionedSource, Source, Target } from '../src/index.js';
import { MemoryBroker, type StreamProducer } from '../src/memory/index.js';
import { connect, type RabbitTarget } from '../src/rabbitmq/index.js';

/**
 * A demo's streams by name: the first is the source that `write` feeds, the second the
 * default target. A pipeline names its intermediate stream too.
 */
const DEFAULT_STREAMS = ['sensors', 'rollups'] as const;

export interface DemoBroker {
  readonly name: string;
  /** Appends messages to the source stream, one chunk. */
  write(messages: readonly Uint8Array[]): Promise<void>;
  /** The library's producer on the source stream, under producer name `name`. */
  producer(name: string): StreamProducer;
  source(stream?: string): Source;
  /** A target for the named producer; a previous one of the same producer is closed first. */
  target(producer: string, stream?: string): Promise<Target>;
  /** Creates super stream `name` of `partitions` partitions; returns its partition streams. */
  createSuperStream(name: string, partitions: number): Promise<string[]>;
  /** Appends messages to partition `index` of super stream `name`, one chunk. */
  writePartition(name: string, index: number, messages: readonly Uint8Array[]): Promise<void>;
  /** The partitions of super stream `name` as a partitioned job reads them. */
  superStreamSource(name: string): PartitionedSource;
  /** Partition `index` of super stream `name`, read as a plain stream. */
  partitionSource(name: string, index: number): Source;
  /** Every message of a target stream, in offset order. */
  targetMessages(stream?: string): Promise<Uint8Array[]>;
  close(): Promise<void>;
}

export function memoryBroker(streams: readonly string[] = DEFAULT_STREAMS): DemoBroker {
  const broker = new MemoryBroker();
  for (const stream of streams) broker.createStream(stream);
  const [source = '', target = ''] = streams;
  return {
    name: 'the embedded broker',
    write: (messages) => {
      broker.append(source, messages);
      return Promise.resolve();
    },
    producer: (name) => broker.producer(source, { name }),
    source: (stream = source) => broker.source(stream),
    target: (producer, stream = target) => Promise.resolve(broker.target(stream, { producer })),
    createSuperStream: (name, partitions) =>
      Promise.resolve(broker.createSuperStream(name, { partitions })),
    writePartition: (name, index, messages) => {
      broker.append(broker.partitions(name)[index] ?? '', messages);
      return Promise.resolve();
    },
    superStreamSource: (name) => broker.superStreamSource(name),
    partitionSource: (name, index) => broker.source(broker.partitions(name)[index] ?? ''),
    targetMessages: (stream = target) =>
      Promise.resolve(broker.messages(stream).map((m) => m.bytes)),
    close: () => Promise.resolve(),
  };
}

export async function rabbitBroker(
  streams: readonly string[] = DEFAULT_STREAMS,
): Promise<DemoBroker> {
  const url =
    process.env.RABBITMQ_STREAM_URL ??
    execFileSync('scripts/rabbitmq.sh', ['start'], { encoding: 'utf8' }).trim().split('\n').pop();
  const rabbit = await connect(url ?? '');
  // Fresh streams per run, so that the demo always starts from an empty target.
  const run = randomUUID().slice(0, 8);
  const named = (stream: string) => `${stream}-${run}`;
  for (const stream of streams) await rabbit.createStream(named(stream));
  const [source = '', target = ''] = streams;
  let written = 0n;
  const feeder = rabbit.target(named(source), { producer: 'sensor-feeder' });
  const current = new Map<string, RabbitTarget>();
  const producers: StreamProducer[] = [];
  const superStreams = new Map<string, { partitions: string[]; written: bigint[] }>();
  return {
    name: `RabbitMQ at ${url} (streams ${streams.map(named).join(', ')})`,
    write: async (messages) => {
      written += BigInt(messages.length);
      await feeder.publish(written - 1n, messages); // one sub-entry batch
    },
    producer: (name) => {
      const producer = rabbit.producer(named(source), { name });
      producers.push(producer);
      return producer;
    },
    source: (stream = source) => rabbit.source(named(stream)),
    // A crashed run's publisher must go before a new one declares the same name on this
    // connection (RabbitMQ refuses the duplicate); a real crash closes its connection.
    target: async (producer, stream = target) => {
      await current.get(producer)?.close();
      const next = rabbit.target(named(stream), { producer });
      current.set(producer, next);
      return next;
    },
    createSuperStream: async (name, count) => {
      const partitions = await rabbit.createSuperStream(named(name), { partitions: count });
      superStreams.set(name, { partitions, written: partitions.map(() => 0n) });
      return partitions;
    },
    writePartition: async (name, index, messages) => {
      const superStream = superStreams.get(name);
      const stream = superStream?.partitions[index] ?? '';
      const written = (superStream?.written[index] ?? 0n) + BigInt(messages.length);
      superStream?.written.splice(index, 1, written);
      const producer = `feeder-${stream}`;
      const feeder = current.get(producer) ?? rabbit.target(stream, { producer });
      current.set(producer, feeder);
      await feeder.publish(written - 1n, messages); // one sub-entry batch
    },
    superStreamSource: (name) => rabbit.superStreamSource(named(name)),
    partitionSource: (name, index) =>
      rabbit.source(superStreams.get(name)?.partitions[index] ?? ''),
    targetMessages: async (stream = target) => {
      const source = rabbit.source(named(stream));
      const end = await source.endOffset();
      const messages: Uint8Array[] = [];
      if (end === 0n) return messages;
      const stop = new AbortController();
      for await (const chunk of source.read(0n, stop.signal)) {
        for (let i = 0; i < chunk.count; i++)
          messages.push(chunk.bytes.slice(chunk.starts[i], chunk.ends[i]));
        if (chunk.firstOffset + BigInt(chunk.count) >= end) break;
      }
      stop.abort();
      return messages;
    },
    close: async () => {
      for (const producer of producers) await producer.close();
      for (const target of current.values()) await target.close();
      for (const stream of streams) await rabbit.deleteStream(named(stream));
      for (const name of superStreams.keys()) await rabbit.deleteSuperStream(named(name));
      await rabbit.close();
    },
  };
}
