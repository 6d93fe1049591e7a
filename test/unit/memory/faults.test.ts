import { describe, expect, it } from 'vitest';
import { ConfigError, PublishError } from '../../../src/common/errors.js';
import { MemoryBroker, SimulatedCrash, type FaultSpec } from '../../../src/memory/index.js';
import { bytes, text } from './helpers.js';

function setup(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 1 });
  broker.createStream('out');
  return broker;
}

function stored(broker: MemoryBroker): string[] {
  return broker.messages('out').map((m) => text(m.bytes));
}

describe('fault injection', () => {
  it('before-publish rejects the k-th publish with SimulatedCrash and stores nothing', async () => {
    const broker = setup();
    const fault = broker.injectFault({ stream: 'out', atPublish: 2, point: 'before-publish' });
    const target = broker.target('out', { producer: 'job' });
    await target.publish(1n, bytes('1'));
    expect(fault.fired).toBe(false);
    await expect(target.publish(2n, bytes('2'))).rejects.toBeInstanceOf(SimulatedCrash);
    expect(fault.fired).toBe(true);
    expect(stored(broker)).toEqual(['1']);
    await expect(target.lastPublishingId()).rejects.toBeInstanceOf(SimulatedCrash);
  });

  it('after-publish stores the write, then rejects with SimulatedCrash', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'after-publish' });
    const target = broker.target('out', { producer: 'job' });
    await expect(target.publish(4n, bytes('4'))).rejects.toMatchObject({
      name: 'SimulatedCrash',
      point: 'after-publish',
    });
    expect(stored(broker)).toEqual(['4']);
    await expect(broker.target('out', { producer: 'job' }).lastPublishingId()).resolves.toBe(4n);
  });

  it('after-confirm confirms the write, then fails the next call of that target', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'after-confirm' });
    const target = broker.target('out', { producer: 'job' });
    await expect(target.publish(4n, bytes('4'))).resolves.toBeUndefined();
    await expect(target.publish(5n, bytes('5'))).rejects.toBeInstanceOf(SimulatedCrash);
    expect(stored(broker)).toEqual(['4']);
  });

  it('lose-confirm stores the write, then rejects with a retriable PublishError', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'lose-confirm' });
    const target = broker.target('out', { producer: 'job' });
    const error = await target.publish(4n, bytes('4')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ retriable: true, publishingId: 4n });
    expect((error as Error).message).toContain('confirm lost');
    // The runner reads the resume point again (the Target contract), then retries: the
    // retry is deduplicated.
    expect(await target.lastPublishingId()).toBe(4n);
    await target.publish(4n, bytes('4'));
    expect(stored(broker)).toEqual(['4']);
  });

  it('calls onFire synchronously, before the publish settles', async () => {
    const broker = setup();
    const controller = new AbortController();
    broker.injectFault({
      stream: 'out',
      atPublish: 1,
      point: 'after-confirm',
      onFire: () => controller.abort(),
    });
    const publishing = broker.target('out', { producer: 'job' }).publish(1n, bytes('1'));
    expect(controller.signal.aborted).toBe(true);
    await publishing;
  });

  it('counts only publishes to its stream, by its producer when given, from injection on', async () => {
    const broker = setup();
    broker.createStream('elsewhere');
    const target = broker.target('out', { producer: 'job' });
    await target.publish(1n, bytes('before injection'));
    const spec: FaultSpec = {
      stream: 'out',
      producer: 'job',
      atPublish: 2,
      point: 'before-publish',
    };
    const fault = broker.injectFault(spec);
    await broker.target('elsewhere', { producer: 'job' }).publish(1n, bytes('x'));
    await broker.target('out', { producer: 'other' }).publish(1n, bytes('x'));
    await target.publish(2n, bytes('2'));
    expect(fault.fired).toBe(false);
    await expect(target.publish(3n, bytes('3'))).rejects.toBeInstanceOf(SimulatedCrash);
  });

  it('fires each fault once, so a restarted job runs on', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'before-publish' });
    await expect(
      broker.target('out', { producer: 'job' }).publish(1n, bytes('1')),
    ).rejects.toThrow();
    await broker.target('out', { producer: 'job' }).publish(1n, bytes('1'));
    expect(stored(broker)).toEqual(['1']);
  });

  it('never stores a pipelined publish issued after the crash', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'after-publish' });
    const target = broker.target('out', { producer: 'job' });
    const results = await Promise.allSettled([
      target.publish(1n, bytes('1')),
      target.publish(2n, bytes('2')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(stored(broker)).toEqual(['1']);
  });

  it('does nothing once cleared', async () => {
    const broker = setup();
    const fault = broker.injectFault({ stream: 'out', atPublish: 1, point: 'before-publish' });
    broker.clearFaults();
    await broker.target('out', { producer: 'job' }).publish(1n, bytes('1'));
    expect(fault.fired).toBe(false);
  });

  it('refuse-publish stores nothing and rejects with a retriable PublishError, code 6', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 1, point: 'refuse-publish' });
    const target = broker.target('out', { producer: 'job' });
    await expect(target.publish(1n, bytes('1'))).rejects.toMatchObject({
      name: 'PublishError',
      retriable: true,
      responseCode: 6,
      message: "publish of id 1 to stream 'out' failed (code 6): stream not available",
    });
    expect(stored(broker)).toEqual([]);
    await target.lastPublishingId();
    await target.publish(1n, bytes('1'));
    expect(stored(broker)).toEqual(['1']);
  });

  it('fails `times` matching publishes in a row, every one with Infinity until cleared', async () => {
    const broker = setup();
    broker.injectFault({ stream: 'out', atPublish: 2, point: 'refuse-publish', times: 3 });
    const target = broker.target('out', { producer: 'job' });
    const outcomes: string[] = [];
    for (let id = 1n; id <= 6n; id++) {
      await target.lastPublishingId(); // lifts the fence a refusal leaves
      outcomes.push(
        await target.publish(id, bytes(String(id))).then(
          () => 'stored',
          (error: unknown) => (error instanceof PublishError ? 'refused' : 'other'),
        ),
      );
    }
    expect(outcomes).toEqual(['stored', 'refused', 'refused', 'refused', 'stored', 'stored']);

    const forever = broker.injectFault({
      stream: 'out',
      atPublish: 1,
      point: 'refuse-publish',
      times: Infinity,
    });
    for (let i = 0; i < 20; i++) {
      await target.lastPublishingId();
      await expect(target.publish(7n, bytes('7'))).rejects.toBeInstanceOf(PublishError);
    }
    expect(forever.fired).toBe(true);
    broker.clearFaults();
    await target.lastPublishingId();
    await target.publish(7n, bytes('7'));
    expect(stored(broker)).toEqual(['1', '5', '6', '7']);
  });

  it('refuses a `times` that is not a count, and more than once at a point that kills the target', () => {
    const spec = { stream: 'out', atPublish: 1 } as const;
    expect(() => setup().injectFault({ ...spec, point: 'lose-confirm', times: 0 })).toThrow(
      'times must be an integer >= 1 or Infinity, given: 0',
    );
    expect(() => setup().injectFault({ ...spec, point: 'after-publish', times: 2 })).toThrow(
      "times must be 1 at 'after-publish': the target is dead after it fires once, given: 2",
    );
  });

  it('refuses a publish count below 1', () => {
    expect(() =>
      setup().injectFault({ stream: 'out', atPublish: 0, point: 'after-publish' }),
    ).toThrow(ConfigError);
  });
});
