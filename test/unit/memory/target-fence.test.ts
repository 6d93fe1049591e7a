// The embedded target keeps the Target contract's fence as the RabbitMQ one does: after a
// failed publish nothing is stored until the resume point has been read again.
import { describe, expect, it } from 'vitest';
import { PublishError } from '../../../src/common/errors.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { bytes, text } from './helpers.js';

function setup(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 7 });
  broker.createStream('out');
  return broker;
}

const stored = (broker: MemoryBroker) => broker.messages('out').map((m) => text(m.bytes));

describe('the embedded target after a failed publish', () => {
  it('refuses a later publish with a retriable PublishError and stores nothing of it', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'lose-confirm' });
    const target = broker.target('out', { producer: 'job' });
    await expect(target.publish(1n, bytes('1'))).rejects.toMatchObject({ retriable: true });

    const refused = await target.publish(2n, bytes('2')).catch((e: unknown) => e);

    expect(refused).toBeInstanceOf(PublishError);
    expect(refused).toMatchObject({ retriable: true, publishingId: 2n });
    expect(stored(broker)).toEqual(['1']);
  });

  it('refuses later publishes after a refused write too, until the resume point is read', async () => {
    const broker = setup();
    const target = broker.target('out', { producer: 'job' });
    const tooLarge = [new Uint8Array(target.maxWriteBytes + 1)];
    await expect(target.publish(1n, tooLarge)).rejects.toMatchObject({ retriable: false });
    await expect(target.publish(2n, bytes('2'))).rejects.toMatchObject({ retriable: true });

    expect(await target.lastPublishingId()).toBe(0n);
    await target.publish(2n, bytes('2'));

    expect(stored(broker)).toEqual(['2']);
  });

  it("stays fenced when another name's last publishing id is read", async () => {
    const broker = setup();
    await broker.target('out', { producer: 'former' }).publish(4n, bytes('4'));
    const target = broker.target('out', { producer: 'job' });
    const tooLarge = [new Uint8Array(target.maxWriteBytes + 1)];
    await expect(target.publish(1n, tooLarge)).rejects.toMatchObject({ retriable: false });

    expect(await target.lastPublishingIdOf('former')).toBe(4n);
    expect(await target.lastPublishingIdOf('unknown')).toBe(0n);

    await expect(target.publish(2n, bytes('2'))).rejects.toMatchObject({ retriable: true });
    expect(stored(broker)).toEqual(['4']);
  });

  it('does not count a refused publish against the fault plan', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'lose-confirm' });
    const fault = broker.injectFault({ stream: 'out', atPublish: 2, point: 'lose-confirm' });
    const target = broker.target('out', { producer: 'job' });
    await expect(target.publish(1n, bytes('1'))).rejects.toMatchObject({ retriable: true });
    await expect(target.publish(2n, bytes('2'))).rejects.toMatchObject({ retriable: true });

    expect(fault.fired).toBe(false);
  });
});
