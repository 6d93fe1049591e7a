// The producer over a RabbitMQ target on a connection the test drives: what reaches the
// socket while confirms are outstanding, where a named producer's ids start, and what
// close waits for.
import { describe, expect, it } from 'vitest';
import { PublishError, ResumePointError } from '../../../src/common/errors.js';
import { STREAM_NOT_AVAILABLE } from '../../../src/common/stream-protocol.js';
import { StreamProducer } from '../../../src/producer/stream-producer.js';
import { PUBLISHER_ID, ScriptedLink, scriptedTarget, settle } from './scripted-link.js';

function unnamed(link: ScriptedLink, maxInFlight: number): StreamProducer {
  return new StreamProducer(scriptedTarget(link, { producer: '', maxInFlight }), { maxInFlight });
}

describe('a producer on RabbitMQ', () => {
  it('writes no more than maxInFlight unconfirmed messages; the rest wait, and go out together as confirms free room', async () => {
    const link = new ScriptedLink();
    const producer = unnamed(link, 3);
    const confirmed: bigint[] = [];
    const sends = Array.from({ length: 8 }, (_, n) =>
      producer.send({ n }).then((id) => {
        confirmed.push(id);
        return id;
      }),
    );
    await settle();
    expect(link.frames).toEqual([[1n, 2n, 3n]]);
    expect(confirmed).toEqual([]); // written, not confirmed: no send resolves

    link.confirm(PUBLISHER_ID, 1n, 2n);
    await settle();
    expect(confirmed).toEqual([1n, 2n]);
    expect(link.frames).toEqual([
      [1n, 2n, 3n],
      [4n, 5n],
    ]);

    link.confirm(PUBLISHER_ID, 3n, 4n, 5n);
    await settle();
    expect(link.frames).toEqual([
      [1n, 2n, 3n],
      [4n, 5n],
      [6n, 7n, 8n],
    ]);
    link.confirm(PUBLISHER_ID, 6n, 7n, 8n);
    expect(await Promise.all(sends)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
  });

  it('puts in one frame only what fits, and a message too large for any frame alone', async () => {
    const link = new ScriptedLink();
    const producer = unnamed(link, 64);
    const target = scriptedTarget(new ScriptedLink());
    // Three messages whose frame would be just over frame_max, then one over the limit alone.
    const third = Math.floor(target.maxWriteBytes / 3);
    const sizes = [third, third, third, target.maxWriteBytes + 1, 10];
    const sends = sizes.map((size) => producer.send(new Uint8Array(size)).catch((e: unknown) => e));
    await settle();
    // Refused before it reaches the target, it fences nothing: the others go out.
    expect(link.frames).toEqual([[1n, 2n], [3n], [5n]]);
    link.confirm(PUBLISHER_ID, 1n, 2n, 3n, 5n);
    const outcomes = await Promise.all(sends.slice(0, 4));
    expect(outcomes.slice(0, 3)).toEqual([1n, 2n, 3n]);
    expect(outcomes[3]).toBeInstanceOf(PublishError);
    expect(outcomes[3]).toMatchObject({
      stream: 'out',
      publishingId: 4n,
      retriable: false,
      responseCode: 0x0e,
    });
    expect(String(outcomes[3])).toContain('over the limit of 1048551 per write');
    await expect(sends[4]).resolves.toBe(5n);
  });

  it('named, asks the broker its last id once and numbers every send above it', async () => {
    const link = new ScriptedLink();
    const producer = new StreamProducer(scriptedTarget(link, { producer: 'feed' }), {
      name: 'feed',
    });
    const sends = [producer.send({ n: 1 }), producer.send({ n: 2 })];
    await settle();
    expect(link.sent).toEqual([]); // waiting for the resume point
    link.answerQuery({ code: 1, sequence: 41n });
    await settle();
    expect(link.sent).toEqual([42n, 43n]);
    link.confirm(PUBLISHER_ID, 42n, 43n);
    expect(await Promise.all(sends)).toEqual([42n, 43n]);
  });

  it('named, rejects the sends waiting for a resume point the broker refused, and asks again for the next', async () => {
    const link = new ScriptedLink();
    const producer = new StreamProducer(scriptedTarget(link, { producer: 'feed' }), {
      name: 'feed',
    });
    const waiting = [1, 2].map((n) => producer.send({ n }).catch((e: unknown) => e));
    link.answerQuery({ code: 0x02 }); // stream does not exist
    for (const outcome of await Promise.all(waiting)) {
      expect(outcome).toBeInstanceOf(ResumePointError);
      expect(outcome).toMatchObject({ stream: 'out', retriable: false });
    }
    expect(link.sent).toEqual([]);

    const next = producer.send({ n: 3 });
    link.answerQuery({ code: 1, sequence: 5n });
    await settle();
    link.confirm(PUBLISHER_ID, 6n);
    await expect(next).resolves.toBe(6n);
  });

  it('after a failed send reads the resume point again, which lets the target send on', async () => {
    const link = new ScriptedLink();
    const producer = unnamed(link, 4);
    const first = producer.send({ n: 1 }).catch((e: unknown) => e);
    await settle();
    link.metadataUpdate('out', STREAM_NOT_AVAILABLE); // the broker dropped the publisher
    expect(await first).toMatchObject({ name: 'PublishError', stream: 'out', retriable: true });

    const second = producer.send({ n: 2 });
    await settle();
    link.answerQuery({ code: 1, sequence: 0n });
    await settle();
    expect(link.sent).toEqual([1n, 2n]);
    link.confirm(PUBLISHER_ID, 2n);
    await expect(second).resolves.toBe(2n);
  });

  it('close waits for the outstanding confirms, then deletes the publisher', async () => {
    const link = new ScriptedLink();
    const producer = unnamed(link, 4);
    const sends = [producer.send({ n: 1 }), producer.send({ n: 2 })];
    await settle();
    let closed = false;
    const closing = producer.close().then(() => (closed = true));
    await settle();
    expect([closed, link.deletions]).toEqual([false, 0]);
    await expect(producer.send({ n: 3 })).rejects.toThrow(/^send after close \(stream 'out'\)/);

    link.confirm(PUBLISHER_ID, 1n, 2n);
    await closing;
    expect(await Promise.all(sends)).toEqual([1n, 2n]);
    expect(link.deletions).toBe(1);
    expect(link.sent).toEqual([1n, 2n]);
  });

  it('a refusal of one message rejects that send alone with a PublishError', async () => {
    const link = new ScriptedLink();
    const producer = unnamed(link, 4);
    const sends = [1, 2].map((n) => producer.send({ n }).catch((e: unknown) => e));
    await settle();
    link.confirm(PUBLISHER_ID, 1n);
    link.publishError(PUBLISHER_ID, 2n, 0x06); // internal error
    const [first, second] = await Promise.all(sends);
    expect(first).toBe(1n);
    expect(second).toBeInstanceOf(PublishError);
    expect(second).toMatchObject({ stream: 'out', publishingId: 2n, responseCode: 0x06 });
  });
});
