// Issue 17 item 3 on RabbitMQ: two partitioned jobs whose former derived producer names were
// alike each read all their input, and a job finding its producer's last result (read back with
// the RabbitMQ target's readResult, a 'batch' result's first part) written by another job
// definition stops before publishing anything.
import { randomUUID } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  aggregate,
  decodeResult,
  JobDefinitionError,
  jsonMessage,
  lastWriteId,
  type Target,
} from '../../src/index.js';
import type { RabbitTarget } from '../../src/rabbitmq/write/target.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();

interface Sale {
  readonly amount: number;
}

const sales = (amounts: readonly number[]): Uint8Array[] =>
  amounts.map((amount) => jsonMessage({ amount } satisfies Sale));

describe('job identity on RabbitMQ', () => {
  it(
    "gives job 'sum' over '<orders>-<eu>-0' and job 'sum-<orders>' over '<eu>-0' their own producers: the second reads all its input",
    async () => {
      const run = randomUUID().slice(0, 8);
      const orders = `orders${run}`;
      const eu = `eu${run}`;
      const [first] = await real.rabbit.createSuperStream(orders, { bindingKeys: [`${eu}-0`] });
      onTestFinished(() => real.rabbit.deleteSuperStream(orders));
      const [second] = await real.rabbit.createSuperStream(eu, { bindingKeys: ['0'] });
      onTestFinished(() => real.rabbit.deleteSuperStream(eu));
      const totals = await real.newStream('identity-totals');
      await publishAll(real.rabbit, first ?? '', sales([1, 2, 3, 4, 5, 6]));
      await publishAll(real.rabbit, second ?? '', sales([10, 20, 30, 40]));
      const job = async (superStream: string, name: string) => {
        const targets: RabbitTarget[] = [];
        try {
          return await aggregate<Sale>(real.rabbit.superStreamSource(superStream))
            .count(2)
            .reduce((sum, sale) => sum + sale.amount, 0)
            .toPartitions(
              (p) => {
                const target = real.rabbit.target(totals, { producer: p.producer });
                targets.push(target);
                return target;
              },
              { name, retryDelayMs: 0 },
            )
            .run({ untilCaughtUp: true });
        } finally {
          for (const target of targets) await target.close();
        }
      };
      expect((await job(orders, 'sum')).results).toBe(3);
      expect((await job(eu, `sum-${orders}`)).results).toBe(2);
      const results = (await readAll(real.rabbit, totals)).map((m) => decodeResult<number>(m));
      expect(results.map((r) => [r.producer, r.outputs[0]?.value])).toEqual([
        [`sum@${orders}-${eu}-0`, 3],
        [`sum@${orders}-${eu}-0`, 7],
        [`sum@${orders}-${eu}-0`, 11],
        [`sum-${orders}@${eu}-0`, 30],
        [`sum-${orders}@${eu}-0`, 70],
      ]);
    },
    bound(60_000),
  );

  it(
    'stops a job whose producer last published under another definition before it publishes, and goes on with allowDefinitionChange',
    async () => {
      const source = await real.newStream('identity-source');
      const totals = await real.newStream('identity-totals');
      const run = async (n: number, allowDefinitionChange = false) => {
        const target: Target & { close(): Promise<void> } = real.rabbit.target(totals, {
          producer: 'totals',
        });
        try {
          return await aggregate<{ key: string; amount: number }>(real.rabbit.source(source))
            .count(n)
            .key((sale) => sale.key)
            .reduce((sum, sale) => sum + sale.amount, 0)
            .to(target, { pack: 'batch', retryDelayMs: 0, allowDefinitionChange })
            .run({ untilCaughtUp: true });
        } finally {
          await target.close();
        }
      };
      const sale = (key: string, amount: number) => jsonMessage({ key, amount });
      await publishAll(real.rabbit, source, [
        sale('a', 1),
        sale('b', 2),
        sale('a', 3),
        sale('b', 4),
      ]);
      expect((await run(2)).results).toBe(2);
      await publishAll(real.rabbit, source, [sale('a', 5), sale('b', 6), sale('a', 7)]);
      const before = await readAll(real.rabbit, totals);
      const changed = run(3);
      await expect(changed).rejects.toBeInstanceOf(JobDefinitionError);
      await expect(changed).rejects.toMatchObject({
        producer: 'totals',
        publishingId: lastWriteId(3n),
        found: `{"source":"${source}","window":"count(2)"}`,
        expected: `{"source":"${source}","window":"count(3)"}`,
      });
      expect(await readAll(real.rabbit, totals)).toEqual(before);
      // The same definition restarts; a change asked for goes on from the last result.
      expect((await run(2)).results).toBe(1);
      await publishAll(real.rabbit, source, [sale('b', 8), sale('a', 9)]);
      expect((await run(3, true)).results).toBe(1);
      const results = (await readAll(real.rabbit, totals)).map((m) => decodeResult<number>(m));
      expect(
        results.map((r) => [r.lastOffset, r.definition?.includes('count(3)'), r.outputs[0]?.value]),
      ).toEqual([
        // 'batch': a result of two keys is two messages.
        [1n, false, 1],
        [1n, false, 2],
        [3n, false, 3],
        [3n, false, 4],
        [5n, false, 5],
        [5n, false, 6],
        [8n, true, 16],
        [8n, true, 8],
      ]);
    },
    bound(60_000),
  );
});
