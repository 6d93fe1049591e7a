// The two brokers the demo runs on: the embedded one (default) and a real RabbitMQ
// (STREAM_WINDOWS_BROKER=rabbitmq, at RABBITMQ_STREAM_URL or the local one that
// scripts/rabbitmq.sh starts).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Source, Target } from '../src/index.js';
import { MemoryBroker } from '../src/memory/index.js';
import { connect, type RabbitTarget } from '../src/rabbitmq/index.js';

export interface DemoBroker {
  readonly name: string;
  /** Appends messages to the source stream, one chunk. */
  write(messages: readonly Uint8Array[]): Promise<void>;
  source(): Source;
  /** A target for the named producer; a previous one of the same run is closed first. */
  target(producer: string): Promise<Target>;
  /** Every message of the target stream, in offset order. */
  targetMessages(): Promise<Uint8Array[]>;
  close(): Promise<void>;
}

export function memoryBroker(): DemoBroker {
  const broker = new MemoryBroker();
  broker.createStream('sensors');
  broker.createStream('rollups');
  return {
    name: 'the embedded broker',
    write: async (messages) => void broker.append('sensors', messages),
    source: () => broker.source('sensors'),
    target: async (producer) => broker.target('rollups', { producer }),
    targetMessages: async () => broker.messages('rollups').map((m) => m.bytes),
    close: async () => undefined,
  };
}

export async function rabbitBroker(): Promise<DemoBroker> {
  const url =
    process.env.RABBITMQ_STREAM_URL ??
    execFileSync('scripts/rabbitmq.sh', ['start'], { encoding: 'utf8' }).trim().split('\n').pop();
  const rabbit = await connect(url ?? '');
  // Fresh streams per run, so that the demo always starts from an empty target.
  const run = randomUUID().slice(0, 8);
  const [sensors, rollups] = [`sensors-${run}`, `rollups-${run}`];
  await rabbit.createStream(sensors);
  await rabbit.createStream(rollups);
  let written = 0n;
  const feeder = rabbit.target(sensors, { producer: 'sensor-feeder' });
  let current: RabbitTarget | undefined;
  return {
    name: `RabbitMQ at ${url} (streams ${sensors}, ${rollups})`,
    write: async (messages) => {
      written += BigInt(messages.length);
      await feeder.publish(written - 1n, messages); // one sub-entry batch
    },
    source: () => rabbit.source(sensors),
    // A crashed run's publisher must go before a new one declares the same name on this
    // connection (RabbitMQ refuses the duplicate); a real crash closes its connection.
    target: async (producer) => {
      await current?.close();
      current = rabbit.target(rollups, { producer });
      return current;
    },
    targetMessages: async () => {
      const source = rabbit.source(rollups);
      const end = await source.endOffset();
      const messages: Uint8Array[] = [];
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
      await rabbit.deleteStream(sensors);
      await rabbit.deleteStream(rollups);
      await rabbit.close();
    },
  };
}
