// The embedded broker refuses a second producer of one name on one stream over one connection,
// as RabbitMQ does (checked against RabbitMQ 4.0.5 by test/integration/job-rebuilt.test.ts).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { bytes, text } from './helpers.js';

function setup(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 1 });
  broker.createStream('out');
  broker.createStream('other');
  return broker;
}

const PRECONDITION_FAILED = {
  name: 'PublishError',
  retriable: false,
  responseCode: 17,
  message:
    "publish of id 2 to stream 'out' failed (code 17): declaring the producer failed: precondition failed",
};

describe("the embedded broker's producer declarations", () => {
  it('refuses a second target of one name on one stream over one connection while the first is declared', async () => {
    const broker = setup();
    await broker.target('out', { producer: 'job' }).publish(1n, bytes('1'));
    const second = broker.target('out', { producer: 'job' });
    await expect(second.publish(2n, bytes('2'))).rejects.toMatchObject(PRECONDITION_FAILED);
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['1']);
  });

  it('takes the name again once the first target released it, or crashed', async () => {
    const broker = setup();
    const first = broker.target('out', { producer: 'job' });
    await first.publish(1n, bytes('1'));
    await first.release();
    await broker.target('out', { producer: 'job' }).publish(2n, bytes('2'));

    broker.injectFault({ stream: 'out', atPublish: 1, point: 'after-publish' });
    const crashing = broker.target('out', { producer: 'crash' });
    await expect(crashing.publish(1n, bytes('c'))).rejects.toMatchObject({
      name: 'SimulatedCrash',
    });
    await broker.target('out', { producer: 'crash' }).publish(2n, bytes('d'));
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['1', '2', 'c', 'd']);
  });

  it('declares again on the next publish after a release, once the resume point is read', async () => {
    const broker = setup();
    const target = broker.target('out', { producer: 'job' });
    await target.publish(1n, bytes('1'));
    await target.release();
    // Released like a fence: nothing goes out until lastPublishingId() answers.
    await expect(target.publish(2n, bytes('2'))).rejects.toMatchObject({ retriable: true });
    expect(await target.lastPublishingId()).toBe(1n);
    await target.publish(2n, bytes('2'));
    await expect(
      broker.target('out', { producer: 'job' }).publish(3n, bytes('3')),
    ).rejects.toMatchObject({ responseCode: 17 });
  });

  it('lets the name be declared over another connection, on another stream, or under another name', async () => {
    const broker = setup();
    await broker.target('out', { producer: 'job' }).publish(1n, bytes('1'));
    await broker.target('out', { producer: 'job', connection: 'b' }).publish(2n, bytes('2'));
    await broker.target('other', { producer: 'job' }).publish(1n, bytes('x'));
    await broker.target('out', { producer: 'job-2' }).publish(1n, bytes('3'));
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['1', '2', '3']);
  });

  it('does not hold the names of producers feeding a stream', async () => {
    const broker = setup();
    const feeder = broker.producer('out', { name: 'job' });
    await feeder.send({ fed: 1 });
    await broker.target('out', { producer: 'job' }).publish(5n, bytes('5'));
    expect(broker.messages('out')).toHaveLength(2);
  });

  it('refuses a connection name that is not a non-empty string', () => {
    expect(() => setup().target('out', { producer: 'job', connection: '' })).toThrow(ConfigError);
    expect(() => setup().target('out', { producer: 'job', connection: '' })).toThrow(
      "connection must be a non-empty string, given: ''",
    );
  });
});
