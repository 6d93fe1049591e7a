// Super streams on the real broker over the stream protocol: creating, listing, routing and
// deleting them, and routing that agrees with the stock client's hash routing.
import { afterAll, describe, expect, it } from 'vitest';
import { StreamCommandError } from '../../src/rabbitmq/stream-command-error.js';
import { rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { stockForTests } from '../support/clients/stock-client.js';

const real = rabbitForTests();
const stock = stockForTests();
const superStreams: string[] = [];

afterAll(async () => {
  for (const name of superStreams) await real.rabbit.deleteSuperStream(name);
});

function newSuperStreamName(): string {
  const name = uniqueStream('super');
  superStreams.push(name);
  return name;
}

describe('super streams on RabbitMQ', () => {
  it('creates a super stream of n partitions named <name>-<index>, lists them in order, and creating it again changes nothing', async () => {
    const name = newSuperStreamName();

    const created = await real.rabbit.createSuperStream(name, { partitions: 3 });
    const again = await real.rabbit.createSuperStream(name, { partitions: 5 });

    expect(created).toEqual([`${name}-0`, `${name}-1`, `${name}-2`]);
    expect(await real.rabbit.partitions(name)).toEqual(created);
    expect(again).toEqual(created);
  });

  it('creates partitions named by binding keys, and the Route query matches the binding key exactly', async () => {
    const name = newSuperStreamName();

    const created = await real.rabbit.createSuperStream(name, { bindingKeys: ['eu', 'us', 'ap'] });

    expect(created).toEqual([`${name}-eu`, `${name}-us`, `${name}-ap`]);
    expect(await real.rabbit.partitions(name)).toEqual(created);
    expect(await real.rabbit.bindingRoute(name, 'us')).toEqual([`${name}-us`]);
    expect(await real.rabbit.bindingRoute(name, 'nowhere')).toEqual([]);
  });

  it('deletes a super stream with its partitions, and deleting it again resolves', async () => {
    const name = newSuperStreamName();
    const [first] = await real.rabbit.createSuperStream(name, { partitions: 2 });

    await real.rabbit.deleteSuperStream(name);
    await real.rabbit.deleteSuperStream(name);

    const listing = real.rabbit.partitions(name);
    await expect(listing).rejects.toThrow(StreamCommandError);
    await expect(listing).rejects.toMatchObject({ responseCode: 0x02, stream: name });
    // The partition stream went with it: it can be created afresh as a plain stream.
    await real.rabbit.createStream(real.track(first ?? ''));
    expect(await real.rabbit.source(first ?? '').endOffset()).toBe(0n);
  });

  it('refuses a super stream whose partition name is already a stream, naming the code', async () => {
    const name = newSuperStreamName();
    await real.rabbit.createStream(real.track(`${name}-1`));

    const creating = real.rabbit.createSuperStream(name, { partitions: 2 });

    await expect(creating).rejects.toThrow(StreamCommandError);
    await expect(creating).rejects.toMatchObject({ responseCode: 0x05, stream: name }); // already exists
  });

  it('routes 300 keys to the partitions the stock client hash-routes them to', async () => {
    const name = newSuperStreamName();
    const partitions = await real.rabbit.createSuperStream(name, { partitions: 4 });
    const keys = Array.from({ length: 300 }, (_, i) => `<key-${i}-${i * 7919}>`);

    const publisher = await stock.client.declareSuperStreamPublisher(
      { superStream: name },
      (content) => content,
    );
    for (const key of keys) await publisher.send(Buffer.from(key), {});
    await publisher.close();
    const stored = new Map<string, string>();
    for (const partition of partitions) {
      for (const message of await readAll(real.rabbit, partition)) {
        const text = Buffer.from(message).toString('latin1');
        for (const key of keys) if (text.includes(key)) stored.set(key, partition);
      }
    }

    expect(stored.size).toBe(keys.length);
    const used = new Set(stored.values());
    expect(used.size).toBe(partitions.length); // every partition got keys: a real spread
    for (const key of keys) expect(await real.rabbit.route(name, key)).toBe(stored.get(key));
  });
});
