import { describe, expect, it } from 'vitest';
import type { SourceChunk } from '../../../src/ports/ports.js';
import {
  MemoryBroker,
  SingleActiveMemberLostError,
  type SingleActiveMember,
  type SingleActiveMemberOptions,
} from '../../../src/memory/index.js';
import { bytes, chunkTexts, settle } from './helpers.js';
import { RecoveryError, SourceError } from '../../../src/index.js';

/** Members that log their callbacks, named for the log. */
class Instances {
  readonly events: string[] = [];
  private readonly names = new Map<SingleActiveMember, string>();
  private readonly joined = new Map<string, SingleActiveMember[]>();

  constructor(readonly broker: MemoryBroker) {}

  join(
    instance: string,
    streams: readonly string[],
    options: Partial<SingleActiveMemberOptions> = {},
  ): SingleActiveMember[] {
    const members = streams.map((stream) => {
      const member = this.broker.singleActive(stream, {
        name: 'job',
        resumeFrom: () => {
          this.events.push(`${instance} activated on ${stream}`);
          return Promise.resolve(0n);
        },
        onDeactivate: () => {
          this.events.push(`${instance} deactivated on ${stream}`);
          return Promise.resolve();
        },
        ...options,
      });
      this.names.set(member, instance);
      return member;
    });
    this.joined.set(instance, members);
    return members;
  }

  async leave(instance: string): Promise<void> {
    await Promise.all((this.joined.get(instance) ?? []).map((member) => member.close()));
  }

  /** Who is active on each stream, by the group's view and by what the member delivers. */
  activeOn(streams: readonly string[]): (string | undefined)[] {
    return streams.map((stream) => {
      const { active, members } = this.broker.consumerGroup(stream, 'job');
      const delivering = members.filter((member) => member.active);
      expect(delivering).toEqual(active === undefined ? [] : [active]);
      return active === undefined ? undefined : this.names.get(active);
    });
  }

  /** Who is stepping down on `stream`, if anyone. */
  deactivatingOn(stream: string): string | undefined {
    const { deactivating } = this.broker.consumerGroup(stream, 'job');
    return deactivating === undefined ? undefined : this.names.get(deactivating);
  }
}

function superStream(): { broker: MemoryBroker; partitions: string[] } {
  const broker = new MemoryBroker({ now: () => 1 });
  return { broker, partitions: broker.createSuperStream('orders', { partitions: 3 }) };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('single active consumer groups on super-stream partitions', () => {
  it('makes a lone member active on every partition', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    instances.join('A', partitions);
    await settle();
    expect(instances.activeOn(partitions)).toEqual(['A', 'A', 'A']);
  });

  it('activates member (partition index rem group size) in join order with two and three members', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    instances.join('A', partitions);
    instances.join('B', partitions);
    await settle();
    expect(instances.activeOn(partitions)).toEqual(['A', 'B', 'A']);
    instances.join('C', partitions);
    await settle();
    expect(instances.activeOn(partitions)).toEqual(['A', 'B', 'C']);
  });

  it('rebalances over the remaining members when one leaves, and again when it joins back', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    for (const instance of ['A', 'B', 'C']) instances.join(instance, partitions);
    await settle();
    await instances.leave('A');
    await settle();
    expect(instances.activeOn(partitions)).toEqual(['B', 'C', 'B']);
    instances.join('A', partitions);
    await settle();
    expect(instances.activeOn(partitions)).toEqual(['B', 'C', 'A']);
  });

  it('deactivates the active member before activating the next, and never the other way round', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    instances.join('A', partitions);
    await settle();
    instances.events.length = 0;
    instances.join('B', partitions);
    await settle();
    // Only partition 1 moves (1 rem 2 = B): A steps down there, then B starts.
    expect(instances.events).toEqual(['A deactivated on orders-1', 'B activated on orders-1']);
  });

  it('activates the next member at once, without a deactivation, when the active one leaves', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    instances.join('A', partitions);
    instances.join('B', partitions);
    await settle();
    instances.events.length = 0;
    await instances.leave('A');
    await settle();
    expect(instances.events).toEqual(['B activated on orders-0', 'B activated on orders-2']);
  });

  it('waits for the stepping-down member to answer before activating anyone', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    const answer = deferred();
    const [, stream] = partitions as [string, string, string];
    instances.join('A', [stream], { onDeactivate: () => answer.promise });
    await settle();
    instances.join('B', [stream]);
    await settle();
    expect(instances.deactivatingOn(stream)).toBe('A');
    expect(instances.activeOn([stream])).toEqual([undefined]);
    expect(instances.events).toEqual(['A activated on orders-1']);
    answer.resolve();
    await settle();
    expect(instances.activeOn([stream])).toEqual(['B']);
    expect(broker.consumerGroup(stream, 'job').deactivating).toBeUndefined();
  });

  it('lets the answer pick by the group as it is then, when members join during a step-down', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    const answer = deferred();
    const [, stream] = partitions as [string, string, string];
    instances.join('A', [stream], { onDeactivate: () => answer.promise });
    await settle();
    instances.join('B', [stream]); // 1 rem 2: B, so A steps down
    instances.join('C', [stream]); // only joins: an answer is awaited
    await settle();
    answer.resolve();
    await settle();
    expect(instances.activeOn([stream])).toEqual(['B']); // 1 rem 3
    expect(instances.events).toEqual(['A activated on orders-1', 'B activated on orders-1']);
  });

  it('treats a stepping-down member that leaves before answering as having answered', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    const [, stream] = partitions as [string, string, string];
    instances.join('A', [stream], { onDeactivate: () => new Promise<void>(() => undefined) });
    await settle();
    instances.join('B', [stream]);
    await settle();
    await instances.leave('A');
    await settle();
    expect(instances.activeOn([stream])).toEqual(['B']);
  });

  it('stops delivering to a member told to step down, and the next one reads from its answer', async () => {
    const { broker, partitions } = superStream();
    const [, stream] = partitions as [string, string, string];
    broker.append(stream, bytes('m0', 'm1'));
    const first = broker.singleActive(stream, {
      name: 'job',
      resumeFrom: () => Promise.resolve(0n),
    });
    const signal = new AbortController().signal;
    const reading = first.read(signal)[Symbol.asyncIterator]();
    const chunk = await reading.next();
    expect(chunkTexts(chunk.value as SourceChunk)).toEqual([
      [0n, 'm0'],
      [1n, 'm1'],
    ]);
    const second = broker.singleActive(stream, {
      name: 'job',
      resumeFrom: () => Promise.resolve(1n),
    });
    await settle();
    broker.append(stream, bytes('m2'));
    expect(await reading.next()).toEqual({ done: true, value: undefined });
    const taken = await second.read(signal)[Symbol.asyncIterator]().next();
    expect(chunkTexts(taken.value as SourceChunk)).toEqual([[1n, 'm1']]);
    await Promise.all([first.close(), second.close()]);
  });

  it('drops a member whose onDeactivate fails: it leaves the group, the next takes over, its read fails', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    const [, stream] = partitions as [string, string, string];
    const [failing] = instances.join('A', [stream], {
      onDeactivate: () => Promise.reject(new Error('drain failed')),
    }) as [SingleActiveMember];
    await settle();
    instances.join('B', [stream]);
    await settle();
    expect(instances.activeOn([stream])).toEqual(['B']);
    expect(broker.consumerGroup(stream, 'job').members).toHaveLength(1);
    const read = failing.read(new AbortController().signal)[Symbol.asyncIterator]().next();
    await expect(read).rejects.toBeInstanceOf(SingleActiveMemberLostError);
    await expect(read).rejects.toMatchObject({
      stream: 'orders-1',
      group: 'job',
      callback: 'onDeactivate',
      retriable: true,
    });
  });

  it("ends a member's reads with its resume point's own error when that is not retriable, so a job stops instead of joining again forever", async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    const [, stream] = partitions as [string, string, string];
    const refused = new RecoveryError('rollups', 'job-1', 7n, 'removed by retention');
    const [failing] = instances.join('A', [stream], {
      resumeFrom: () => Promise.reject(refused),
    }) as [SingleActiveMember];
    await settle();
    const read = failing.read(new AbortController().signal)[Symbol.asyncIterator]().next();
    await expect(read).rejects.toBe(refused);
    // It left the group all the same: the next member takes over.
    expect(broker.consumerGroup(stream, 'job').members).toHaveLength(0);
  });

  it("ends a member's reads with an Error when its resume point rejects with no error at all", async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    const [, stream] = partitions as [string, string, string];
    const [failing] = instances.join('A', [stream], {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a JavaScript caller may reject with anything
      resumeFrom: () => Promise.reject(undefined),
    }) as [SingleActiveMember];
    await settle();
    const read = failing.read(new AbortController().signal)[Symbol.asyncIterator]().next();
    await expect(read).rejects.toThrow(Error);
    await expect(read).rejects.toThrow('undefined');
  });

  it('wraps a retriable resume point failure as a retriable SingleActiveMemberLostError', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    const [, stream] = partitions as [string, string, string];
    const [failing] = instances.join('A', [stream], {
      resumeFrom: () => Promise.reject(new SourceError(stream, true, 'connection lost')),
    }) as [SingleActiveMember];
    await settle();
    const read = failing.read(new AbortController().signal)[Symbol.asyncIterator]().next();
    await expect(read).rejects.toMatchObject({
      name: 'SingleActiveMemberLostError',
      callback: 'resumeFrom',
      retriable: true,
    });
  });

  it('calls no callback of a member closed before its activation had its turn', async () => {
    const { broker, partitions } = superStream();
    const instances = new Instances(broker);
    await Promise.all(instances.join('A', partitions).map((member) => member.close()));
    instances.join('B', partitions);
    await settle();
    expect(instances.events).toEqual([
      'B activated on orders-0',
      'B activated on orders-1',
      'B activated on orders-2',
    ]);
  });

  it('refuses a member without a group name or resumeFrom with a ConfigError', () => {
    const { broker, partitions } = superStream();
    const [stream] = partitions as [string];
    expect(() =>
      broker.singleActive(stream, { name: '', resumeFrom: () => Promise.resolve(0n) }),
    ).toThrow("singleActive.name must be a non-empty string, given: ''");
    expect(() =>
      broker.singleActive(stream, {
        name: 'job',
        resumeFrom: undefined as unknown as SingleActiveMemberOptions['resumeFrom'],
      }),
    ).toThrow('singleActive.resumeFrom must be a function, given: undefined');
  });
});

describe('single active consumer groups on a plain stream', () => {
  it('keeps the first member active as others join, and activates the next in join order when it leaves', async () => {
    const broker = new MemoryBroker();
    broker.createStream('events');
    const instances = new Instances(broker);
    for (const instance of ['A', 'B', 'C']) instances.join(instance, ['events']);
    await settle();
    expect(instances.activeOn(['events'])).toEqual(['A']);
    await instances.leave('A');
    await settle();
    expect(instances.activeOn(['events'])).toEqual(['B']);
    expect(instances.events).toEqual(['A activated on events', 'B activated on events']);
  });

  it('keeps the active member when a passive one leaves', async () => {
    const broker = new MemoryBroker();
    broker.createStream('events');
    const instances = new Instances(broker);
    for (const instance of ['A', 'B', 'C']) instances.join(instance, ['events']);
    await settle();
    await instances.leave('B');
    await settle();
    expect(instances.activeOn(['events'])).toEqual(['A']);
    expect(instances.events).toEqual(['A activated on events']);
  });
});
