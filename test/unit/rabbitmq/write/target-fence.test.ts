// The fence of the Target contract on the RabbitMQ target, over a connection the test drives:
// after a failed publish or the loss of the publisher, nothing is sent until the resume point
// has been read again. A later id sent past a failed one could be stored without it, and the
// broker would discard the failed one as a duplicate when the job resumes.
import { describe, expect, it } from 'vitest';
import { PublishError } from '../../../../src/common/errors.js';
import {
  PUBLISHER_DOES_NOT_EXIST,
  STREAM_NOT_AVAILABLE,
} from '../../../../src/common/stream-protocol.js';
import { PUBLISHER_ID, ScriptedLink, outcome, scriptedTarget, settle } from '../scripted-link.js';

const message = [new Uint8Array([1, 2, 3])];

/** The broker's two ways of dropping the publisher: an error for a publish, or a metadata update. */
const drops = [
  {
    name: 'a publish error "publisher does not exist"',
    code: PUBLISHER_DOES_NOT_EXIST,
    drop: (link: ScriptedLink) => link.publishError(PUBLISHER_ID, 1n, PUBLISHER_DOES_NOT_EXIST),
  },
  {
    name: 'a metadata update "stream not available"',
    code: STREAM_NOT_AVAILABLE,
    drop: (link: ScriptedLink) => link.metadataUpdate('out', STREAM_NOT_AVAILABLE),
  },
] as const;

describe('a RabbitMQ target whose publisher the broker drops', () => {
  it.each(drops)(
    'refuses a publish made after $name, before any other answer, without sending it',
    async ({ code, drop }) => {
      const link = new ScriptedLink();
      const target = scriptedTarget(link);
      const first = outcome(target.publish(1n, message));
      await settle();

      drop(link);
      const second = outcome(target.publish(2n, message));
      await settle();

      expect(link.sent).toEqual([1n]);
      expect(await second).toMatchObject({
        name: 'PublishError',
        retriable: true,
        publishingId: 2n,
      });
      expect(await first).toMatchObject({
        name: 'PublishError',
        retriable: true,
        responseCode: code,
      });
    },
  );

  it.each(drops)(
    'fails every publish in flight at once on $name, as no confirm can follow',
    async ({ drop }) => {
      const link = new ScriptedLink();
      const target = scriptedTarget(link);
      const publishes = [1n, 2n, 3n].map((id) => outcome(target.publish(id, message)));
      await settle();

      drop(link);

      for (const result of await Promise.all(publishes)) {
        expect(result).toBeInstanceOf(PublishError);
        expect(result).toMatchObject({ retriable: true });
      }
      expect(link.unanswered).toEqual([]); // no Metadata round trip decides it
    },
  );

  it('publishes again, declaring the publisher anew, once the resume point has been read', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();
    link.metadataUpdate('out', STREAM_NOT_AVAILABLE);
    await first;

    link.answerQuery({ code: 1, sequence: 0n });
    expect(await target.lastPublishingId()).toBe(0n);
    const again = outcome(target.publish(1n, message));
    await settle();
    link.confirm(PUBLISHER_ID, 1n);

    expect(await again).toBe('confirmed');
    expect(link.sent).toEqual([1n, 1n]);
    expect(link.declarations).toBe(2);
  });

  it('ignores a late "publisher does not exist" for a write that failed already', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const inFlight = [1n, 2n].map((id) => outcome(target.publish(id, message)));
    await settle();
    link.publishError(PUBLISHER_ID, 1n, PUBLISHER_DOES_NOT_EXIST);
    await Promise.all(inFlight);
    link.answerQuery({ code: 1, sequence: 0n });
    await target.lastPublishingId();

    // The broker's refusal of write 2 was already on its way when the job resumed.
    link.publishError(PUBLISHER_ID, 2n, PUBLISHER_DOES_NOT_EXIST);
    const again = [1n, 2n].map((id) => outcome(target.publish(id, message)));
    await settle();
    link.confirm(PUBLISHER_ID, 1n, 2n);

    expect(await Promise.all(again)).toEqual(['confirmed', 'confirmed']);
    expect(link.declarations).toBe(2);
  });

  it('stays fenced when the resume point was asked before the failure and answered after it', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();
    const asked = target.lastPublishingId();

    link.publishError(PUBLISHER_ID, 1n, PUBLISHER_DOES_NOT_EXIST);
    link.answerQuery({ code: 1, sequence: 0n });
    await asked;
    await first;

    expect(await outcome(target.publish(1n, message))).toMatchObject({ retriable: true });
    expect(link.sent).toEqual([1n]);
  });

  it("stays fenced when another name's last publishing id is read", async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();
    link.metadataUpdate('out', STREAM_NOT_AVAILABLE);
    await first;

    link.answerQuery({ code: 1, sequence: 9n });
    expect(await target.lastPublishingIdOf('job-former')).toBe(9n);

    expect(await outcome(target.publish(1n, message))).toMatchObject({ retriable: true });
    expect(link.sent).toEqual([1n]);
  });

  it('stays fenced when reading the resume point fails', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();
    link.metadataUpdate('out', STREAM_NOT_AVAILABLE);
    await first;

    link.answerQuery({ code: STREAM_NOT_AVAILABLE });
    await expect(target.lastPublishingId()).rejects.toMatchObject({ retriable: true });

    expect(await outcome(target.publish(1n, message))).toMatchObject({ retriable: true });
    expect(link.sent).toEqual([1n]);
  });
});

describe('a RabbitMQ target after a failed publish', () => {
  it('refuses later publishes after a confirm timeout, though a new connection is up', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link, { confirmTimeoutMs: 1 });

    expect(await outcome(target.publish(1n, message))).toMatchObject({ retriable: true });
    expect(await outcome(target.publish(2n, message))).toMatchObject({ retriable: true });
    // 1 ms may pass before the first is sent on a busy machine (the test failed once under
    // load, its message not kept): what matters is that the second never is.
    expect(link.sent).not.toContain(2n);
  });

  it('refuses later publishes after a connection loss failed one in flight', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();

    link.lose();
    expect(await first).toMatchObject({ retriable: true });
    expect(await outcome(target.publish(2n, message))).toMatchObject({ retriable: true });
    expect(link.sent).toEqual([1n]);
  });

  it('keeps publishing after a connection loss with nothing in flight, on a publisher declared anew', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();
    link.confirm(PUBLISHER_ID, 1n);
    await first;

    link.lose();
    const second = outcome(target.publish(2n, message));
    await settle();
    link.confirm(PUBLISHER_ID, 2n);

    expect(await second).toBe('confirmed');
    expect(link.sent).toEqual([1n, 2n]);
    expect(link.declarations).toBe(2);
  });

  it('refuses later publishes after one was refused before sending (over frame_max)', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const tooLarge = [new Uint8Array(target.maxWriteBytes + 1)];

    expect(await outcome(target.publish(1n, tooLarge))).toMatchObject({ retriable: false });
    expect(await outcome(target.publish(2n, message))).toMatchObject({ retriable: true });
    expect(link.sent).toEqual([]);
  });

  it('refuses a publish that waited for a slot while an earlier one failed', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link, { maxInFlight: 1 });
    const first = outcome(target.publish(1n, message));
    const waiting = outcome(target.publish(2n, message));
    await settle();

    link.publishError(PUBLISHER_ID, 1n, PUBLISHER_DOES_NOT_EXIST);

    expect(await first).toMatchObject({ retriable: true });
    expect(await waiting).toMatchObject({ retriable: true, publishingId: 2n });
    expect(link.sent).toEqual([1n]);
  });

  it('refuses later publishes after the broker refused one with another code', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();

    link.publishError(PUBLISHER_ID, 1n, 0x11);

    expect(await first).toMatchObject({ retriable: false, responseCode: 0x11 });
    expect(await outcome(target.publish(2n, message))).toMatchObject({ retriable: true });
    expect(link.sent).toEqual([1n]);
  });
});
