// Races on the publish side: a publish made before a connection loss or a close is never
// sent after it. Sent after, it could be stored while an earlier, failed one is not, and the
// broker would then discard the earlier one as a duplicate when the job resumes: a loss.
import { randomUUID } from 'node:crypto';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { describe, expect, it, vi } from 'vitest';
import { PublishError, sourceMessage } from '../../src/index.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();

const newStream = () => real.newStream('races');

const message = (text: string) => [sourceMessage(text)];
const settle = (publish: Promise<void>) =>
  publish.then(
    () => 'confirmed',
    (error: unknown) => ((error as PublishError).retriable ? 'retriable' : 'final'),
  );

describe('a RabbitMQ target under races', () => {
  it('should never send publishes that waited for a slot across a connection loss', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: `p-${randomUUID()}`, maxInFlight: 2 });
    await target.publish(0n, message('warm'));
    // The network loses the bytes of publishes 1 and 2, as a cut link does.
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called with .call on its connection
    const send = Connection.prototype.send;
    const swallow = vi.spyOn(Connection.prototype, 'send').mockImplementation(function (
      this: Connection,
      request,
    ) {
      const frame = (request as { key: number; toBuffer(): Buffer }).toBuffer();
      const lost = request.key === 2 && [1n, 2n].includes(frame.readBigUInt64BE(13));
      return lost ? new Promise(() => undefined) : send.call(this, request);
    });
    try {
      const publishes = [1n, 2n, 3n, 4n, 5n, 6n].map((id) =>
        settle(target.publish(id, message(`m${id}`))),
      );
      await new Promise((resolve) => setImmediate(resolve)); // 1 and 2 sent, 3..6 wait
      real.rabbit.dropConnectionForTesting();
      expect(await Promise.all(publishes)).toEqual(Array(6).fill('retriable'));
    } finally {
      swallow.mockRestore();
    }
    expect(await target.lastPublishingId()).toBe(0n);
    expect((await readAll(real.rabbit, stream)).map((m) => Buffer.from(m))).toEqual([
      Buffer.from(sourceMessage('warm')),
    ]);
    await target.close();
  });

  it('should stop publishes waiting at close and free the publisher for the next target', async () => {
    const stream = await newStream();
    const first = real.rabbit.target(stream, { producer: `p1-${randomUUID()}`, maxInFlight: 1 });
    await first.publish(0n, message('warm'));
    const waiting = [
      settle(first.publish(1n, message('x1'))),
      settle(first.publish(2n, message('x2'))),
    ];
    await first.close();
    expect(await Promise.all(waiting)).toEqual(['final', 'final']);
    // The next target gets the freed publisher id: the broker must not still hold it.
    const next = real.rabbit.target(stream, { producer: `p2-${randomUUID()}` });
    await expect(next.publish(0n, message('y'))).resolves.toBeUndefined();
    await next.close();
  });
});
