import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { partitionFor } from '../../../src/common/partition-routing.js';
import { MemoryBroker, StreamNotFoundError } from '../../../src/memory/index.js';
import { bytes, text } from './helpers.js';

describe('super streams on the embedded broker', () => {
  it('names n partitions <name>-0 … <name>-(n-1), in order, as rabbitmq-streams add_super_stream does', () => {
    const broker = new MemoryBroker();
    expect(broker.createSuperStream('orders', { partitions: 4 })).toEqual([
      'orders-0',
      'orders-1',
      'orders-2',
      'orders-3',
    ]);
    expect(broker.partitions('orders')).toEqual(['orders-0', 'orders-1', 'orders-2', 'orders-3']);
  });

  it('creates three partitions by default, as the CLI and the JS client do', () => {
    const broker = new MemoryBroker();
    expect(broker.createSuperStream('orders')).toEqual(['orders-0', 'orders-1', 'orders-2']);
  });

  it('names partitions <name>-<key> after binding keys, in the order of the keys', () => {
    const broker = new MemoryBroker();
    broker.createSuperStream('invoices', { bindingKeys: ['us', 'eu', 'apac'] });
    expect(broker.partitions('invoices')).toEqual(['invoices-us', 'invoices-eu', 'invoices-apac']);
  });

  it('makes every partition an ordinary stream that can be written and read', () => {
    const broker = new MemoryBroker();
    broker.createSuperStream('orders', { partitions: 2 });
    broker.append('orders-1', bytes('a', 'b'));
    expect(broker.messages('orders-1').map((m) => text(m.bytes))).toEqual(['a', 'b']);
    expect(broker.messages('orders-0')).toEqual([]);
  });

  it('keeps a last publishing id per partition, as each partition is a stream of its own', async () => {
    const broker = new MemoryBroker();
    broker.createSuperStream('orders', { partitions: 2 });
    await broker.target('orders-0', { producer: 'job' }).publish(7n, bytes('x'));
    await broker.target('orders-1', { producer: 'job' }).publish(3n, bytes('y'));
    const ids = await Promise.all(
      broker
        .partitions('orders')
        .map((p) => broker.target(p, { producer: 'job' }).lastPublishingId()),
    );
    expect(ids).toEqual([7n, 3n]);
  });

  it('routes a key as the clients do: hello0..hello19 fall 9, 7 and 4 over three partitions', () => {
    const broker = new MemoryBroker();
    const partitions = broker.createSuperStream('s', { partitions: 3 });
    const routed = Array.from({ length: 20 }, (_, i) => broker.route('s', `hello${i}`));
    expect(partitions.map((p) => routed.filter((r) => r === p).length)).toEqual([9, 7, 4]);
    expect(routed).toEqual(
      Array.from({ length: 20 }, (_, i) => partitionFor(`hello${i}`, partitions)),
    );
  });

  it('does nothing when the super stream exists, as createStream', () => {
    const broker = new MemoryBroker();
    broker.createSuperStream('orders', { partitions: 2 });
    broker.append('orders-0', bytes('kept'));
    expect(broker.createSuperStream('orders', { partitions: 5 })).toEqual(['orders-0', 'orders-1']);
    expect(broker.messages('orders-0')).toHaveLength(1);
  });

  it('validates the layout even when the super stream exists', () => {
    const broker = new MemoryBroker();
    broker.createSuperStream('orders', { partitions: 2 });
    expect(() => broker.createSuperStream('orders', { partitions: 0 })).toThrow(ConfigError);
  });

  it('refuses a partition name that is already a stream', () => {
    const broker = new MemoryBroker();
    broker.createStream('orders-1');
    expect(() => broker.createSuperStream('orders', { partitions: 2 })).toThrow(
      "partitions must not name an existing stream, given: 'orders-1'",
    );
    expect(() => broker.partitions('orders')).toThrow(StreamNotFoundError);
  });

  it.each([
    [{ partitions: 0 }, 'partitions must be an integer >= 1, given: 0'],
    [{ partitions: 1.5 }, 'partitions must be an integer >= 1, given: 1.5'],
    [{ bindingKeys: [] }, 'bindingKeys must be a non-empty array, given: []'],
    [{ bindingKeys: ['a', ''] }, "bindingKeys must hold non-empty strings, given: ''"],
    [{ bindingKeys: ['a', 'a'] }, 'bindingKeys must be unique'],
  ])('refuses the layout %o with a ConfigError', (layout, message) => {
    const broker = new MemoryBroker();
    expect(() => broker.createSuperStream('orders', layout)).toThrow(ConfigError);
    expect(() => broker.createSuperStream('orders', layout)).toThrow(message);
  });

  it('deletes a super stream with its partitions', () => {
    const broker = new MemoryBroker();
    broker.createSuperStream('orders', { partitions: 2 });
    broker.deleteSuperStream('orders');
    expect(() => broker.partitions('orders')).toThrow(StreamNotFoundError);
    expect(() => broker.messages('orders-0')).toThrow(StreamNotFoundError);
  });

  it('drops a deleted partition from the partition list, as RabbitMQ drops its binding', () => {
    const broker = new MemoryBroker();
    broker.createSuperStream('orders', { partitions: 3 });
    broker.deleteStream('orders-1');
    expect(broker.partitions('orders')).toEqual(['orders-0', 'orders-2']);
  });
});
