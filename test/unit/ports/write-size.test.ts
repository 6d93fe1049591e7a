import { describe, expect, it } from 'vitest';
import { PublishError } from '../../../src/common/errors.js';
import { DEFAULT_FRAME_MAX, writeSize } from '../../../src/ports/write-size.js';
import { MemoryBroker } from '../../../src/memory/index.js';

function target(frameMax?: number) {
  const broker = new MemoryBroker(frameMax === undefined ? {} : { frameMax });
  broker.createStream('out');
  return { broker, target: broker.target('out', { producer: 'job' }) };
}

describe('the write size limit', () => {
  it('is frame_max less the 25 bytes a one-message publish frame adds, 1 MiB by default', () => {
    expect(DEFAULT_FRAME_MAX).toBe(1_048_576);
    expect(target().target.maxWriteBytes).toBe(1_048_551);
  });

  it('accepts a message of exactly the limit', async () => {
    const { broker, target: t } = target();
    await t.publish(1n, [new Uint8Array(t.maxWriteBytes)]);
    expect(broker.messages('out')).toHaveLength(1);
  });

  it('rejects a larger write with a permanent frame-too-large PublishError and stores nothing', async () => {
    const { broker, target: t } = target();
    const error = await t
      .publish(1n, [new Uint8Array(t.maxWriteBytes + 1)])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ retriable: false, responseCode: 14, publishingId: 1n });
    expect(broker.messages('out')).toHaveLength(0);
  });

  it('counts a sub-entry batch with its record framing', async () => {
    expect(writeSize([new Uint8Array(10)])).toBe(10);
    // 11-byte entry header instead of a 4-byte length, then 4 bytes per record.
    expect(writeSize([new Uint8Array(10), new Uint8Array(20)])).toBe(7 + 14 + 24);
    // frame_max 100: a two-record frame is 4 + 21 + 11 + (4 + 30) + (4 + 30) = 100 bytes.
    const { broker, target: t } = target(100);
    expect(t.maxWriteBytes).toBe(75);
    await expect(t.publish(1n, [new Uint8Array(30), new Uint8Array(31)])).rejects.toMatchObject({
      responseCode: 14,
    });
    await t.lastPublishingId(); // re-arms the target after the refused write
    await t.publish(1n, [new Uint8Array(30), new Uint8Array(30)]);
    expect(broker.messages('out')).toHaveLength(2);
  });

  it('rejects a batch of more than 65535 messages', async () => {
    const { target: t } = target();
    const messages = Array.from({ length: 65_536 }, () => new Uint8Array(0));
    await expect(t.publish(1n, messages)).rejects.toMatchObject({ retriable: false });
  });
});
