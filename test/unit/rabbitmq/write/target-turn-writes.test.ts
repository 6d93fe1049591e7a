// The RabbitMQ target writes the Publish frames made in one turn of the event loop together,
// in one socket write, at the end of the turn (src/rabbitmq/turn-writes.ts), over a
// connection the test drives. Held back, a frame still keeps to the fence: one made before
// a fence never leaves after it.
import { describe, expect, it } from 'vitest';
import { PublishError } from '../../../../src/common/errors.js';
import { PUBLISHER_ID, ScriptedLink, outcome, scriptedTarget, settle } from '../scripted-link.js';

const message = [new Uint8Array([1, 2, 3])];

/** Lets the continuations run that the publishes made (to their queueing), not the turn's end. */
function continuations(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}

describe('a RabbitMQ target writing the publishes of one turn', () => {
  it('writes them in one socket write, in order, each its own frame and confirm', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const publishes = [1n, 2n, 3n].map((id) => outcome(target.publish(id, message)));

    await settle();

    expect(link.frames).toEqual([[1n], [2n], [3n]]);
    expect(link.socketWrites).toBe(1);
    link.confirm(PUBLISHER_ID, 1n, 2n, 3n);
    expect(await Promise.all(publishes)).toEqual(['confirmed', 'confirmed', 'confirmed']);
  });

  it('writes a publish of a later turn in a write of its own, without waiting for more', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    void outcome(target.publish(1n, message));
    await settle();
    void outcome(target.publish(2n, message));
    await settle();

    expect(link.frames).toEqual([[1n], [2n]]);
    expect(link.socketWrites).toBe(2);
  });

  it('never writes a publish held for the end of the turn once the target is fenced, even when the fence is lifted before the turn ends', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const publishes = [1n, 2n].map((id) => outcome(target.publish(id, message)));
    await continuations();
    expect(link.sent).toEqual([]); // held until the turn ends

    link.lose(); // fails what is in flight, and fences the target
    link.answerQuery({ code: 1, sequence: 0n });
    await target.lastPublishingId(); // lifts the fence, still in the same turn
    await settle();

    expect(link.sent).toEqual([]);
    for (const result of await Promise.all(publishes)) {
      expect(result).toBeInstanceOf(PublishError);
      expect(result).toMatchObject({ retriable: true });
    }
  });

  it('drops a held publish of an ended epoch without failing the same id published again in the same turn', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await continuations();

    link.lose(); // fails publish 1 in flight, and fences the target; its frame is still held
    link.answerQuery({ code: 1, sequence: 0n });
    await target.lastPublishingId(); // lifts the fence, still in the same turn
    const again = outcome(target.publish(1n, message));
    await settle();

    expect(await first).toBeInstanceOf(PublishError);
    expect(link.sent).toEqual([1n]); // the second publish only
    link.confirm(PUBLISHER_ID, 1n);
    expect(await again).toBe('confirmed');
  });

  it('fails a held publish whose turn ended after the target was closed, sending nothing', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const publish = outcome(target.publish(1n, message));
    await continuations();

    await target.close();
    await settle();

    expect(link.sent).toEqual([]);
    expect(await publish).toMatchObject({ name: 'PublishError', retriable: false });
  });

  it('fails the held publishes, retriable, when their write throws at the end of the turn, and throws nothing out of it', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    link.socketBroken = true;
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): void => {
      uncaught.push(error);
    };
    process.prependListener('uncaughtException', onUncaught);
    try {
      const publishes = [1n, 2n].map((id) => outcome(target.publish(id, message)));
      await settle();
      for (const result of await Promise.all(publishes)) {
        expect(result).toBeInstanceOf(PublishError);
        expect(result).toMatchObject({ retriable: true });
      }
      expect(uncaught).toEqual([]);
    } finally {
      process.removeListener('uncaughtException', onUncaught);
    }
  });
});
