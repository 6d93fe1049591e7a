// Offsets stored by reference on a RabbitMQ stream (src/rabbitmq/read/stored-offset.ts), where an
// operator's skip request and a job's stop are kept (src/engine/skip-request.ts).
import { describe, expect, it } from 'vitest';
import { jsonMessage } from '../../src/index.js';
import { MAX_REFERENCE_BYTES } from '../../src/common/stream-protocol.js';
import { skipReference } from '../../src/engine/skip-request.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();

describe('offsets stored on a RabbitMQ stream', () => {
  it('should answer what was stored last under a reference, and none for another', async () => {
    const stream = await real.newStream('stored-offset');
    await publishAll(real.rabbit, stream, [jsonMessage({ i: 0 }), jsonMessage({ i: 1 })]);
    const source = real.rabbit.source(stream);
    expect(await source.storedOffset('a')).toBeUndefined();
    await source.storeOffset('a', 1n);
    await source.storeOffset('a', 0n); // replaced, also by a lower one
    await source.storeOffset('b', 7n);
    expect(await source.storedOffset('a')).toBe(0n);
    expect(await source.storedOffset('b')).toBe(7n);
    // Its tracking chunks take offsets but are no messages: the end stays after the messages.
    expect(await source.endOffset()).toBe(2n);
  });

  it('should keep a reference of 255 bytes and not one of 256, which the broker ignores', async () => {
    const stream = await real.newStream('stored-offset-long');
    const source = real.rabbit.source(stream, { timeoutMs: bound(1_000) });
    const longest = 'x'.repeat(MAX_REFERENCE_BYTES);
    await source.storeOffset(longest, 3n);
    expect(await source.storedOffset(longest)).toBe(3n);
    const over = 'x'.repeat(MAX_REFERENCE_BYTES + 1);
    // Stored without an answer, it never shows: storeOffset gives up after its timeout.
    await expect(source.storeOffset(over, 3n)).rejects.toMatchObject({ name: 'SourceError' });
    expect(await source.storedOffset(over)).toBeUndefined();
  });

  it('should keep the skip request of a target and producer whose names are too long to spell out', async () => {
    const stream = await real.newStream('stored-offset-hashed');
    const source = real.rabbit.source(stream, { timeoutMs: bound(5_000) });
    const reference = skipReference('t'.repeat(200), 'p'.repeat(100));
    await source.storeOffset(reference, 5n);
    expect(await source.storedOffset(reference)).toBe(5n);
    expect(
      await source.storedOffset(skipReference('t'.repeat(200), 'q'.repeat(100))),
    ).toBeUndefined();
  });

  it('should fail for a stream that does not exist, naming it', async () => {
    const missing = `stored-offset-missing-${Date.now()}`;
    await expect(real.rabbit.source(missing).storedOffset('a')).rejects.toThrow(missing);
  });
});
