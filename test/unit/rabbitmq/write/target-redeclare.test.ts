// Declaring the RabbitMQ target's publisher again after a loss, over a connection the test
// drives: on a cluster a declaration first looks the stream's leader up, and a loss or a
// late answer from a connection the target left must not cost it its publisher.
import { describe, expect, it } from 'vitest';
import { PUBLISHER_DOES_NOT_EXIST } from '../../../../src/common/stream-protocol.js';
import { PUBLISHER_ID, ScriptedLink, outcome, scriptedTarget, settle } from '../scripted-link.js';

const message = [new Uint8Array([1, 2, 3])];

describe('a RabbitMQ target declaring its publisher again', () => {
  it('should publish after resuming when the connection was lost while its leader was looked up', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const release = link.holdReady();
    const first = outcome(target.publish(1n, message));
    await settle();
    link.lose(); // while the declaration waits for its connection
    release();
    await settle();
    // The publish waiting on that declaration is refused; the declaration itself went through.
    expect(await first).toMatchObject({ name: 'PublishError', retriable: true });
    expect(link.declarations).toBe(1);

    link.answerQuery({ code: 1, sequence: 0n });
    await target.lastPublishingId();
    const again = outcome(target.publish(1n, message));
    await settle();
    link.confirm(PUBLISHER_ID, 1n);
    // The broker refused the second declaration (the id was declared on that connection):
    // the target took the publisher back (deleted, declared again) and published.
    expect(await again).toBe('confirmed');
    expect(link.deletions).toBe(1);
    expect(link.sent).toEqual([1n]);
  });

  it('should take no refusal from a connection it left for the writes it sends on the next one', async () => {
    const link = new ScriptedLink();
    const target = scriptedTarget(link);
    const first = outcome(target.publish(1n, message));
    await settle();
    link.confirm(PUBLISHER_ID, 1n);
    expect(await first).toBe('confirmed');
    const left = link.lose(); // nothing in flight: the next publish declares on the next one

    const second = outcome(target.publish(2n, message));
    await settle();
    // A late "publisher does not exist" for id 2 from the connection left behind.
    link.publishError(PUBLISHER_ID, 2n, PUBLISHER_DOES_NOT_EXIST, left);
    await settle();
    link.confirm(PUBLISHER_ID, 2n);
    expect(await second).toBe('confirmed');
    expect(link.sent).toEqual([1n, 2n]);
  });
});
