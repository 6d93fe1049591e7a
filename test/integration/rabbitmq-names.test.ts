// Names on the real broker: any name RabbitMQ accepts works, whatever its characters (the
// stock client breaks every frame with a non-ASCII string, see gaps/utf8-strings.ts), and a
// name too long for the protocol (or, for producer and group names, for RabbitMQ) is a
// ConfigError where it is given, before anything is sent and without touching the connection.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { aggregate, ConfigError, decodeResult, jsonMessage, lastWriteId } from '../../src/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/index.js';
import { keepingLogger } from '../support/doubles/keeping-logger.js';
import { publishAll, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const url = inject('rabbitmqUrl');
const child = fileURLToPath(new URL('./names-child.ts', import.meta.url));
const logger = keepingLogger();
let rabbit: RabbitMQ;
const streams: string[] = [];
const superStreams: string[] = [];

beforeAll(async () => {
  rabbit = await connect(url, { logger });
});
afterAll(async () => {
  for (const stream of streams) await rabbit.deleteStream(stream);
  for (const name of superStreams) await rabbit.deleteSuperStream(name);
  await rabbit.close();
});

async function newStream(name: string): Promise<string> {
  streams.push(name);
  await rabbit.createStream(name);
  return name;
}

/** Runs names-child.ts to its end: its exit code and what it printed. */
async function runChild(
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  proc.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const [code] = (await once(proc, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

describe('non-ASCII names on RabbitMQ', () => {
  it(
    'publish under a producer named größe where the stock client dies of an uncaught "Unknown response 22" (gaps/utf8-strings.ts)',
    async () => {
      const stream = await newStream(uniqueStream('names-child'));

      const stock = await runChild('stock', url, stream, 'größe');
      const ours = await runChild('ours', url, stream, 'größe');

      // When the stock child publishes too, the client is fixed and the gap can go.
      expect(stock.code).not.toBe(0);
      expect(stock.stderr).toContain('Unknown response 22');
      expect(ours).toMatchObject({ code: 0, stdout: 'published 1\n' });
    },
    bound(60_000),
  );

  it(
    'run a job from stream größe to stream rollup-é under producer größe, and resume it',
    async () => {
      const id = randomUUID().slice(0, 8);
      const source = await newStream(`größe-${id}`);
      const target = await newStream(`rollup-é-${id}`);
      const producer = `größe-Σ-${id}`;
      // Each run as its own process would: a target of its own, closed when it ends.
      const job = async (amounts: number[]) => {
        await publishAll(
          rabbit,
          source,
          amounts.map((amount) => jsonMessage({ amount })),
        );
        const results = rabbit.target(target, { producer });
        try {
          await aggregate<{ amount: number }>(rabbit.source(source))
            .count(3)
            .reduce((total, order) => total + order.amount, 0)
            .to(results)
            .run({ untilCaughtUp: true });
          return await results.lastPublishingId();
        } finally {
          await results.close();
        }
      };

      expect(await job([1, 2, 3, 4, 5, 6])).toBe(lastWriteId(5n));
      // Resumes from the producer's last publishing id, asked for under its name.
      expect(await job([7, 8, 9])).toBe(lastWriteId(8n));

      const results = (await readAll(rabbit, target)).map((bytes) => decodeResult<number>(bytes));
      expect(results.map((r) => [r.source, r.producer, r.lastOffset])).toEqual([
        [source, producer, 2n],
        [source, producer, 5n],
        [source, producer, 8n],
      ]);
      expect(results.map((r) => r.outputs.map((o) => o.value))).toEqual([[6], [15], [24]]);
    },
    bound(60_000),
  );

  it(
    'run a partitioned job over super stream größe with binding keys été and hiver and group zählung',
    async () => {
      const id = randomUUID().slice(0, 8);
      const superStream = `größe-${id}`;
      superStreams.push(superStream);
      const partitions = await rabbit.createSuperStream(superStream, {
        bindingKeys: ['été', 'hiver'],
      });
      expect(partitions).toEqual([`${superStream}-été`, `${superStream}-hiver`]);
      expect(await rabbit.partitions(superStream)).toEqual(partitions);
      expect(await rabbit.bindingRoute(superStream, 'été')).toEqual([`${superStream}-été`]);
      const amounts = [
        [1, 2, 3],
        [10, 20, 30],
      ];
      for (const [index, partition] of partitions.entries()) {
        await publishAll(
          rabbit,
          partition,
          (amounts[index] ?? []).map((amount) => jsonMessage({ amount })),
        );
      }
      const targets = [
        await newStream(`zählung-été-${id}`),
        await newStream(`zählung-hiver-${id}`),
      ];

      await aggregate<{ amount: number }>(
        rabbit.superStreamSource(superStream, { singleActive: { name: `zählung-${id}` } }),
      )
        .count(3)
        .reduce((total, order) => total + order.amount, 0)
        .toPartitions(
          (partition) =>
            rabbit.target(targets[partition.index] ?? '', { producer: partition.producer }),
          { name: `zählung-${id}` },
        )
        .run({ untilCaughtUp: true });

      for (const [index, target] of targets.entries()) {
        const results = (await readAll(rabbit, target)).map((bytes) => decodeResult<number>(bytes));
        expect(results.map((r) => [r.source, r.outputs.map((o) => o.value)])).toEqual([
          [partitions[index], [sum(amounts[index] ?? [])]],
        ]);
      }
    },
    bound(60_000),
  );
});

describe('names too long for RabbitMQ', () => {
  it(
    'are a ConfigError naming the name and its length, and the shared connection stays up',
    async () => {
      const stream = await newStream(uniqueStream('names-long'));
      const superStream = uniqueStream('names-long-super');
      superStreams.push(superStream);
      await rabbit.createSuperStream(superStream, { partitions: 2 });
      const working = rabbit.target(stream, { producer: 'working' });
      await working.publish(1n, [Buffer.from('before')]);
      const lossesBefore = logger.lines.filter(([, , message]) => message.includes('lost')).length;

      expect(() => rabbit.target(stream, { producer: 'p'.repeat(70_000) })).toThrow(
        /^producer must be at most 255 UTF-8 bytes .*not 70000, given: 'ppp/,
      );
      // RabbitMQ refuses a producer name over 255 bytes (precondition failed): 128 é are 256.
      expect(() => rabbit.target(stream, { producer: 'é'.repeat(128) })).toThrow(ConfigError);
      await expect(rabbit.bindingRoute(superStream, 'k'.repeat(70_000))).rejects.toThrow(
        /^bindingKey must be at most 32767 UTF-8 bytes .*not 70000/,
      );
      await expect(rabbit.createStream('é'.repeat(16_384))).rejects.toThrow(
        /^stream must be at most 233 UTF-8 bytes .*not 32768/,
      );
      expect(() => rabbit.source('s'.repeat(70_000))).toThrow(ConfigError);
      // A property nothing checks by name: refused while its request is encoded, nothing sent.
      await expect(rabbit.createStream(stream, { maxAge: '1'.repeat(70_000) })).rejects.toThrow(
        /^a stream-protocol string must be at most 32767 UTF-8 bytes .*not 70000/,
      );

      await working.publish(2n, [Buffer.from('after')]);
      expect(await working.lastPublishingId()).toBe(2n);
      expect(logger.lines.filter(([, , message]) => message.includes('lost'))).toHaveLength(
        lossesBefore,
      );
      await working.close();
    },
    bound(60_000),
  );
});
