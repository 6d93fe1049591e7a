// Issue 17 item 3's upgrade path on RabbitMQ: a partitioned job whose loops published under the
// names earlier versions derived (`<job>-<partition stream>`), started again under the new
// `<job>@<partition stream>`, stops with a ProducerRenamedError (the old name's last id asked
// with QueryPublisherSequence, no publisher declared) instead of publishing every result a
// second time; allowRereadAfterRename accepts the re-read.
import { randomUUID } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  lastWriteId,
  ProducerRenamedError,
  type Partition,
} from '../../src/index.js';
import type { RabbitTarget } from '../../src/rabbitmq/write/target.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();

interface Sale {
  readonly amount: number;
}

describe('a partitioned job upgraded from the former derived producer names, on RabbitMQ', () => {
  it(
    'stops before publishing anything under the new names, and re-reads only when told to',
    async () => {
      const orders = `orders${randomUUID().slice(0, 8)}`;
      const partitions = await real.rabbit.createSuperStream(orders, { partitions: 2 });
      onTestFinished(() => real.rabbit.deleteSuperStream(orders));
      const totals = await real.newStream('rename-totals');
      for (const partition of partitions) {
        await publishAll(
          real.rabbit,
          partition,
          [1, 2, 3, 4].map((amount) => jsonMessage({ amount } satisfies Sale)),
        );
      }
      const run = async (
        producer: (partition: Partition) => string,
        allowRereadAfterRename?: boolean,
      ) => {
        const targets: RabbitTarget[] = [];
        try {
          return await aggregate<Sale>(real.rabbit.superStreamSource(orders))
            .count(2)
            .reduce((sum, sale) => sum + sale.amount, 0)
            .toPartitions(
              (p) => {
                const target = real.rabbit.target(totals, { producer: producer(p) });
                targets.push(target);
                return target;
              },
              {
                name: 'sum',
                retryDelayMs: 0,
                ...(allowRereadAfterRename === undefined ? {} : { allowRereadAfterRename }),
              },
            )
            .run({ untilCaughtUp: true });
        } finally {
          for (const target of targets) await target.close();
        }
      };
      const before = (p: Partition) => `sum-${p.stream}`;
      expect((await run(before)).results).toBe(4);
      const written = await readAll(real.rabbit, totals);

      const upgraded = run((p) => p.producer);
      await expect(upgraded).rejects.toBeInstanceOf(ProducerRenamedError);
      const error = (await upgraded.catch((e: unknown) => e)) as ProducerRenamedError;
      const partition = partitions.find((stream) => error.producer === `sum@${stream}`);
      expect(partition).toBeDefined();
      expect(error).toMatchObject({
        code: 'PRODUCER_RENAMED',
        retriable: false,
        stream: totals,
        formerProducer: `sum-${partition}`,
        formerPublishingId: lastWriteId(3n),
      });
      expect(await readAll(real.rabbit, totals)).toEqual(written);

      // Kept under the old names, the job resumes where it was; told to, it re-reads.
      expect((await run(before)).results).toBe(0);
      expect((await run((p) => p.producer, true)).results).toBe(4);
      const producers = (await readAll(real.rabbit, totals)).map((m) => decodeResult(m).producer);
      expect(producers.filter((name) => name.startsWith('sum@'))).toHaveLength(4);
      // Then the new names have published: no option needed, nothing more to do.
      expect((await run((p) => p.producer)).results).toBe(0);
    },
    bound(60_000),
  );
});
