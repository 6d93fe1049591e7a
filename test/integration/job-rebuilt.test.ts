// Issue 27 item 4 on RabbitMQ: a job built again in the same process, on the same connection
// and under the same producer name, after its run() ended (an in-process supervisor's restart).
// RabbitMQ refuses a second producer of one name on one stream over one connection while the
// first is declared (precondition failed, code 17), and over another connection it does not:
// the rule the embedded broker keeps (test/unit/memory/declared-producers.test.ts). The runner
// releases its target's producer whenever run() ends, so the rebuilt job publishes.
import { describe, expect, inject, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  ProcessingError,
  PublishError,
} from '../../src/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/index.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();

/** One result per message, its amount, from `source` to `target` as producer 'totals'. */
function job(rabbit: RabbitMQ, source: string, target: string) {
  return aggregate<{ amount: number }>(rabbit.source(source))
    .count(1)
    .reduce((sum, sale) => sum + sale.amount, 0)
    .to(rabbit.target(target, { producer: 'totals' }));
}

const sales = (from: number, to: number): Uint8Array[] =>
  Array.from({ length: to - from }, (_, i) => jsonMessage({ amount: from + i }));

describe('a job built again on the same RabbitMQ connection under the same producer name', () => {
  it('runs again after a run that caught up, and the target holds every result once', async () => {
    const source = await real.newStream('rebuilt-sales');
    const target = await real.newStream('rebuilt-totals');
    await publishAll(real.rabbit, source, sales(0, 4));
    expect(await job(real.rabbit, source, target).run({ untilCaughtUp: true })).toMatchObject({
      results: 4,
    });
    await publishAll(real.rabbit, source, sales(4, 7));
    const again = await job(real.rabbit, source, target).run({ untilCaughtUp: true });
    expect(again).toEqual({ results: 3, duplicates: 0, restarts: 0 });
    const values = (await readAll(real.rabbit, target)).map(
      (bytes) => decodeResult<number>(bytes).outputs[0]?.value,
    );
    expect(values).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('runs again after a run that ended on an error', async () => {
    const source = await real.newStream('rebuilt-sales');
    const target = await real.newStream('rebuilt-totals');
    await publishAll(real.rabbit, source, [...sales(0, 2), new TextEncoder().encode('{bad')]);
    await expect(
      job(real.rabbit, source, target).run({ untilCaughtUp: true }),
    ).rejects.toBeInstanceOf(ProcessingError);
    const dead = aggregate<{ amount: number }>(real.rabbit.source(source))
      .onError('dead-letter')
      .count(1)
      .reduce((sum, sale) => sum + sale.amount, 0)
      .to(real.rabbit.target(target, { producer: 'totals' }));
    expect(await dead.run({ untilCaughtUp: true })).toMatchObject({ results: 1 });
    expect(await readAll(real.rabbit, target)).toHaveLength(3);
  });

  it('is what RabbitMQ refuses while the first producer is declared on that connection, not on another', async () => {
    const stream = await real.newStream('rebuilt-rule');
    const message = [jsonMessage({ amount: 1 })];
    const first = real.rabbit.target(stream, { producer: 'p' });
    await first.publish(1n, message);
    const other = await connect(inject('rabbitmqUrl'));
    try {
      await other.target(stream, { producer: 'p' }).publish(2n, message);
    } finally {
      await other.close();
    }
    const second = real.rabbit.target(stream, { producer: 'p' });
    await second.lastPublishingId();
    const refused = await second.publish(3n, message).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PublishError);
    expect(refused).toMatchObject({ retriable: false, responseCode: 17 });
    await first.release();
    await second.lastPublishingId();
    await second.publish(3n, message);
    await second.close();
    await first.close();
    expect(await readAll(real.rabbit, stream)).toHaveLength(3);
  });
});
