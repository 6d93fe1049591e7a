// Single active consumers on the real broker: who reads, when the next reader is asked where
// to start, and what a step-down does (src/rabbitmq/gaps/consumer-update.ts), next to the
// stock client's super-stream consumer, which goes on handling after it was told to step down.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { Source, SourceChunk } from '../../src/ports/ports.js';
import { SourceDeactivatedError } from '../../src/common/errors.js';
import { encodeMessage } from '../../src/codecs/amqp-message.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { rabbitSource } from '../../src/rabbitmq/read/source.js';
import { Subscription } from '../../src/rabbitmq/read/source-subscription.js';
import {
  offsetsOf,
  publishAll,
  rabbitForTests,
  uniqueStream,
} from '../support/brokers/rabbitmq.js';
import { stockForTests } from '../support/clients/stock-client.js';
import { startProxy, type TcpProxy } from '../support/brokers/tcp-proxy.js';
import { bound } from '../support/timing.js';

const params = parseStreamUrl(inject('rabbitmqUrl'));
const real = rabbitForTests();
const stock = stockForTests();

const DELIVER = 0x0008;
const CONSUMER_UPDATE = 0x001a;
const SUBSCRIBE_RESPONSE = 0x8007;
const CLOSE = 0x0016;

const superStreams: string[] = [];
const proxies: TcpProxy[] = [];
afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  for (const name of superStreams) await real.rabbit.deleteSuperStream(name);
});

async function newSuperStream(partitions: number): Promise<{ name: string; partitions: string[] }> {
  const name = uniqueStream('sac-super');
  superStreams.push(name);
  return { name, partitions: await real.rabbit.createSuperStream(name, { partitions }) };
}

async function proxy(): Promise<TcpProxy> {
  const started = await startProxy(params);
  proxies.push(started);
  return started;
}

const message = (i: number): Uint8Array =>
  encodeMessage({ body: { type: 'data', sections: [Buffer.from(`m${i}`)] } });

/** One message per publish, each confirmed before the next: one chunk each. */
async function publishOneByOne(stream: string, count: number): Promise<void> {
  const feeder = real.rabbit.target(stream, { producer: uniqueStream('feeder') });
  for (let i = 0; i < count; i++) await feeder.publish(BigInt(i), [message(i)]);
  await feeder.close();
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(20);
}

/**
 * One instance of a job over every partition of a super stream, as a runner drives it: one
 * read per partition, read again after a step-down (from the first offset, to see who reads).
 */
class Member {
  /** The partitions (by index) this member was asked where to start for, in order. */
  readonly activations: number[] = [];
  /** Per partition index, the offsets this member received. */
  readonly received = new Map<number, bigint[]>();
  private readonly stopped = new AbortController();
  private readonly loops: Promise<void>[];

  constructor(sources: readonly Source[]) {
    this.loops = sources.map((source, index) => this.loop(source, index));
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    await Promise.all(this.loops);
  }

  private async loop(source: Source, index: number): Promise<void> {
    const from = (): Promise<'first'> => {
      this.activations.push(index);
      return Promise.resolve('first');
    };
    while (!this.stopped.signal.aborted) {
      const read = new AbortController();
      const stop = (): void => read.abort();
      this.stopped.signal.addEventListener('abort', stop);
      try {
        for await (const chunk of source.read(from, read.signal)) {
          this.received.set(index, [...(this.received.get(index) ?? []), ...offsetsOf([chunk])]);
        }
      } catch (error) {
        if (!(error instanceof SourceDeactivatedError)) throw error;
      } finally {
        this.stopped.signal.removeEventListener('abort', stop);
        read.abort(); // after a step-down: the runner's confirms landed, answer the broker
      }
    }
  }
}

/** A read in the background, as a runner would drive one: what it got and how it ended. */
class Reading {
  readonly chunks: SourceChunk[] = [];
  readonly controller = new AbortController();
  readonly ended: Promise<unknown>;
  private waiters: (() => void)[] = [];

  constructor(source: Source, from: () => Promise<bigint | 'first'>) {
    this.ended = (async () => {
      try {
        for await (const chunk of source.read(from, this.controller.signal)) {
          this.chunks.push(chunk);
          for (const wake of this.waiters.splice(0)) wake();
        }
        return undefined;
      } catch (error) {
        return error;
      }
    })();
  }

  get offsets(): bigint[] {
    return offsetsOf(this.chunks);
  }

  async received(messages: number): Promise<void> {
    while (this.offsets.length < messages) await new Promise<void>((r) => this.waiters.push(r));
  }

  async stop(): Promise<unknown> {
    this.controller.abort();
    return this.ended;
  }
}

describe('single active readers of RabbitMQ', () => {
  it('lets one reader of a group read a plain stream, and asks the other where to start only once the first one stopped', async () => {
    const stream = await real.newStream('sac-plain');
    await publishAll(
      real.rabbit,
      stream,
      Array.from({ length: 10 }, (_, i) => message(i)),
    );
    const group = { name: uniqueStream('group') };
    const first = new Reading(real.rabbit.source(stream, { singleActive: group }), () =>
      Promise.resolve(0n),
    );
    await first.received(10);

    const askedAfterFirstStopped: boolean[] = [];
    const second = new Reading(real.rabbit.source(stream, { singleActive: group }), () => {
      askedAfterFirstStopped.push(first.controller.signal.aborted);
      return Promise.resolve(4n);
    });
    await sleep(300);
    expect(askedAfterFirstStopped).toEqual([]); // standing by

    expect(await first.stop()).toBeUndefined();
    await second.received(6);

    expect(askedAfterFirstStopped).toEqual([true]);
    expect(second.offsets).toEqual([4n, 5n, 6n, 7n, 8n, 9n]);
    expect(await second.stop()).toBeUndefined();
  });

  it('stops a reader the broker steps down at once, drops its queued chunks, and answers only when its signal aborts, which alone lets the next member start', async () => {
    const { name, partitions } = await newSuperStream(3);
    const partition = partitions[2] ?? '';
    await publishOneByOne(partition, 20);
    const group = uniqueStream('group');

    // A, the first member, is active; it takes one chunk of the 4 its credit lets the broker
    // send and leaves 3 queued (RabbitMQ sends more only once over half the credit is back).
    const watchA = await proxy();
    const a = rabbitSource(partition, {
      connection: { ...params, port: watchA.port },
      credit: 4,
      singleActive: { name: group, superStream: name },
    });
    const aSignal = new AbortController();
    const aChunks = a.read(() => Promise.resolve(0n), aSignal.signal)[Symbol.asyncIterator]();
    const firstOfA = await aChunks.next();
    expect(firstOfA.done === true ? [] : offsetsOf([firstOfA.value])).toEqual([0n]);
    await watchA.brokerSent(DELIVER, 4);

    // B joins: 2 rem 2 = 0, A stays. C joins: 2 rem 3 = 2, C's turn: A is told to step down.
    const watchOthers = await proxy();
    const viaProxy = { ...params, port: watchOthers.port };
    const memberOf = (): Source =>
      rabbitSource(partition, {
        connection: viaProxy,
        singleActive: { name: group, superStream: name },
      });
    const askedB: boolean[] = [];
    const b = new Reading(memberOf(), () => {
      askedB.push(true);
      return Promise.resolve(0n);
    });
    await watchOthers.brokerSent(SUBSCRIBE_RESPONSE, 1);
    const askedC: { aAborted: boolean; at: number }[] = [];
    const c = new Reading(memberOf(), () => {
      askedC.push({ aAborted: aSignal.signal.aborted, at: performance.now() });
      return Promise.resolve(1n);
    });
    await watchOthers.brokerSent(SUBSCRIBE_RESPONSE, 2);
    await watchA.brokerSent(CONSUMER_UPDATE, 2);
    await sleep(200); // from the proxy across loopback into A's socket

    // Three chunks were queued, none is handed out: the read fails at once.
    const stepDown = aChunks.next();
    await expect(stepDown).rejects.toThrow(SourceDeactivatedError);
    await expect(stepDown).rejects.toMatchObject({ retriable: true, offset: 1n });

    // Holding the abort holds the broker's answer: nobody else is activated meanwhile.
    await sleep(500);
    expect(askedC).toEqual([]);
    expect(c.chunks).toEqual([]);
    const abortedAt = performance.now();
    aSignal.abort();
    await c.received(19);

    expect(askedC.map((asked) => asked.aAborted)).toEqual([true]);
    expect(c.offsets).toEqual(Array.from({ length: 19 }, (_, i) => BigInt(i + 1)));
    expect(askedB).toEqual([]);
    // The broker sent A no chunk after the step-down.
    const keysToA = watchA.fromBroker;
    const stepDownAt = keysToA.lastIndexOf(CONSUMER_UPDATE);
    expect(keysToA.slice(stepDownAt + 1).filter((key) => key === DELIVER)).toEqual([]);
    console.log(
      `step-down answered on abort: C asked where to start ${((askedC[0]?.at ?? 0) - abortedAt).toFixed(1)} ms after A's abort`,
    );
    expect(await b.stop()).toBeUndefined();
    expect(await c.stop()).toBeUndefined();
  });

  it('fails a reader told to step down while it is still asking where to start, with nothing delivered, and lets the next member start only after its abort', async () => {
    const { name, partitions } = await newSuperStream(3);
    const partition = partitions[2] ?? '';
    await publishOneByOne(partition, 5);
    const group = uniqueStream('group');
    const member = (connection: typeof params): Source =>
      rabbitSource(partition, { connection, singleActive: { name: group, superStream: name } });

    const watchA = await proxy();
    let answerA: () => void = () => undefined;
    const aAnswers = new Promise<void>((resolve) => (answerA = resolve));
    let aAsked = false;
    const aSignal = new AbortController();
    const aReading = member({ ...params, port: watchA.port }).read(async () => {
      aAsked = true;
      await aAnswers; // the resume point takes its time
      return 0n;
    }, aSignal.signal);
    const aNext = aReading[Symbol.asyncIterator]().next();
    await until(() => aAsked);

    const watchOthers = await proxy();
    const viaProxy = { ...params, port: watchOthers.port };
    const b = new Reading(member(viaProxy), () => Promise.resolve(0n));
    await watchOthers.brokerSent(SUBSCRIBE_RESPONSE, 1);
    const cAskedAfterAbort: boolean[] = [];
    const c = new Reading(member(viaProxy), () => {
      cAskedAfterAbort.push(aSignal.signal.aborted);
      return Promise.resolve(0n);
    });
    await watchOthers.brokerSent(SUBSCRIBE_RESPONSE, 2);
    await watchA.brokerSent(CONSUMER_UPDATE, 2);

    await expect(aNext).rejects.toThrow(SourceDeactivatedError);
    answerA(); // the activation is answered after the step-down: the broker starts nothing
    await sleep(300);
    expect(cAskedAfterAbort).toEqual([]);
    aSignal.abort();
    await c.received(5);

    expect(cAskedAfterAbort).toEqual([true]);
    expect(c.offsets).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(watchA.fromBroker.filter((key) => key === DELIVER)).toEqual([]);
    expect(await b.stop()).toBeUndefined();
    expect(await c.stop()).toBeUndefined();
  });

  it('answers a step-down still pending when its read is stopped, so that the broker activates the next member', async () => {
    const { name, partitions } = await newSuperStream(2);
    const group = uniqueStream('group');
    await publishAll(real.rabbit, partitions[1] ?? '', [message(0)]);
    const watchA = await proxy();
    const rabbitA = await connect({ ...params, port: watchA.port });
    const rabbitB = await connect(params);
    const [, sourceA] = await rabbitA
      .superStreamSource(name, { singleActive: { name: group } })
      .partitions();
    const [, sourceB] = await rabbitB
      .superStreamSource(name, { singleActive: { name: group } })
      .partitions();
    if (sourceA === undefined || sourceB === undefined) throw new Error('two partitions');
    // A, alone, is active on partition 1 and takes its first chunk, then is busy (no next()).
    const stopA = new AbortController();
    const readA = sourceA.read(() => Promise.resolve('first'), stopA.signal);
    const chunksA = readA[Symbol.asyncIterator]();
    await chunksA.next();
    // B joins: 1 rem 2 = 1, so the broker tells A to step down, and waits for its answer.
    let bAsked = false;
    const readingB = new Reading(sourceB, () => {
      bAsked = true;
      return Promise.resolve('first');
    });
    await watchA.brokerSent(CONSUMER_UPDATE, 2);
    expect(bAsked).toBe(false);
    // A's job is stopped before it ever sees the step-down: closing must answer it.
    stopA.abort();
    await chunksA.return?.(undefined);
    const deadline = Date.now() + 10_000;
    await until(() => bAsked || Date.now() > deadline);
    expect(bAsked).toBe(true);
    await readingB.received(1);
    expect(readingB.offsets).toEqual([0n]);
    await readingB.stop();
    await rabbitA.close();
    await rabbitB.close();
  });

  it('asks a reader being closed nothing when the broker activates it before its Close arrives, so that nothing of a stopped job runs', async () => {
    const stream = await real.newStream('sac-closing');
    await publishAll(real.rabbit, stream, [message(0)]);
    const group = { name: uniqueStream('group') };
    // B, the first member, is active; A joins behind it and stands by, a reader attached.
    const b = new Reading(real.rabbit.source(stream, { singleActive: group }), () =>
      Promise.resolve(0n),
    );
    await b.received(1);
    const watchA = await proxy();
    const a = await Subscription.open(
      { ...params, port: watchA.port },
      { stream, from: 'first', credit: 1, singleActive: group, connectTimeoutMs: bound(10_000) },
    );
    const askedA: string[] = [];
    a.attach(() => {
      askedA.push(a.usable ? 'asked while open' : 'asked after close()');
      return Promise.resolve(0n);
    });
    // A is closed (its job stopped), but its Close is held: the broker still counts it in.
    const closeOfA = watchA.holdFrame(CLOSE);
    const closingA = a.close();
    const releaseCloseOfA = await closeOfA;
    // B leaves: the broker activates A. The update reaches A before the answer to its Close.
    expect(await b.stop()).toBeUndefined();
    await watchA.brokerSent(CONSUMER_UPDATE, 1);
    releaseCloseOfA();
    await closingA;
    expect(askedA).toEqual([]);
  });

  it('spreads the members of a group over the partitions as partition index rem group size, each activated once, as they join', async () => {
    const { name, partitions } = await newSuperStream(3);
    const group = uniqueStream('group');
    const connections: RabbitMQ[] = [];
    const members: Member[] = [];
    // Each member joins every partition before the next one starts joining.
    const join = async (): Promise<Member> => {
      const watch = await proxy();
      const rabbit = await connect({ ...params, port: watch.port });
      connections.push(rabbit);
      const source = rabbit.superStreamSource(name, { singleActive: { name: group } });
      const member = new Member(await source.partitions());
      members.push(member);
      await watch.brokerSent(SUBSCRIBE_RESPONSE, partitions.length);
      return member;
    };

    const m0 = await join();
    await until(() => m0.activations.length === 3); // alone: active everywhere
    const m1 = await join();
    await until(() => m1.activations.includes(1)); // 1 rem 2 = 1
    const m2 = await join();
    await until(() => m2.activations.includes(2)); // 2 rem 3 = 2
    for (const partition of partitions) await publishAll(real.rabbit, partition, [message(0)]);
    await until(() => partitions.every((_, index) => members.some((m) => m.received.has(index))));

    const readers = partitions.map((_, index) =>
      members.flatMap((member, id) => (member.received.has(index) ? [id] : [])),
    );
    expect(readers).toEqual([[0], [1], [2]]);
    expect(members.map((member) => [...member.activations].sort())).toEqual([[0, 1, 2], [1], [2]]);
    for (const member of members) await member.stop();
    for (const rabbit of connections) await rabbit.close();
  });
});

describe('the stock super-stream consumer of rabbitmq-stream-js-client 1.0.0 (gap worked around in src/rabbitmq/gaps/consumer-update.ts)', () => {
  it('answers a step-down at once and goes on handling the chunk it holds while the next member reads the same messages', async () => {
    const { name, partitions } = await newSuperStream(2);
    const partition = partitions[1] ?? '';
    const group = uniqueStream('group');
    const handled: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const consumer = await stock.client.declareSuperStreamConsumer(
      { superStream: name, consumerRef: group },
      async (received) => {
        handled.push(received.content.toString());
        if (handled.length === 1) await gate; // busy with the first message of the chunk
      },
    );
    const feeder = real.rabbit.target(partition, { producer: uniqueStream('feeder') });
    await feeder.publish(
      0n,
      Array.from({ length: 5 }, (_, i) => message(i)),
    ); // one chunk
    await feeder.close();
    await until(() => handled.length === 1);

    // Ours joins partition 1 (1 rem 2 = 1): the stock consumer is told to step down.
    const handledWhenOursAsked: number[] = [];
    const ours = new Reading(
      rabbitSource(partition, {
        connection: params,
        singleActive: { name: group, superStream: name },
      }),
      () => {
        handledWhenOursAsked.push(handled.length);
        return Promise.resolve(0n);
      },
    );
    await ours.received(5);
    release();
    await until(() => handled.length === 5);

    // The broker activated ours on the stock consumer's answer, given while it was still
    // on the first message; it then handled the other four as well.
    expect(handledWhenOursAsked).toEqual([1]);
    expect(handled).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(ours.offsets).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(await ours.stop()).toBeUndefined();
    await consumer.close();
  });
});
