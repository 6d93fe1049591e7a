// rabbit.superStreamSource: one rabbitSource per partition, in the Partitions query's order,
// with its settings checked where they are given, before any partition is listed.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../src/common/errors.js';
import { superStreamSource } from '../../../../src/rabbitmq/read/super-stream-source.js';

const nowhere = {
  hostname: '127.0.0.1',
  port: 1,
  username: 'guest',
  password: 'guest',
  vhost: '/',
};

describe('superStreamSource', () => {
  it('gives one source per partition, in the order the broker lists them', async () => {
    const source = superStreamSource('orders', () => Promise.resolve(['orders-1', 'orders-0']), {
      connection: nowhere,
      singleActive: { name: 'job' },
    });

    const partitions = await source.partitions();

    expect(source.superStream).toBe('orders');
    expect(partitions.map((partition) => partition.stream)).toEqual(['orders-1', 'orders-0']);
  });

  it.each([
    ['', {}, "superStream must be a non-empty string, given: ''"],
    ['orders', { credit: 0 }, 'credit must be an integer from 1 to 65535, given: 0'],
    [
      'orders',
      { singleActive: { name: '' } },
      "singleActive.name must be a non-empty string, given: ''",
    ],
  ])('refuses super stream %j with %j before listing its partitions', (name, options, message) => {
    let listed = 0;
    const make = () =>
      superStreamSource(
        name,
        () => {
          listed++;
          return Promise.resolve([]);
        },
        { connection: nowhere, ...options },
      );

    expect(make).toThrow(ConfigError);
    expect(make).toThrow(message);
    expect(listed).toBe(0);
  });
});
