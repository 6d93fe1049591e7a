// The RabbitMQ target declares its producer as soon as the resume point is read (a job reads it
// just before it publishes): the declaration's round trip then overlaps the job's reading of
// its source, where the first publish used to wait for it. In a failover the standby's first
// result waited for it behind the chunks processed meanwhile (130 ms in one bench kill).
import { describe, expect, it } from 'vitest';
import { PUBLISHER_ID, ScriptedLink, outcome, scriptedTarget, settle } from '../scripted-link.js';

const message = [new Uint8Array([1, 2, 3])];

describe('a RabbitMQ target whose resume point is read', () => {
  it('declares its producer then, and publishes without declaring it again', async () => {
    const link = new ScriptedLink();
    link.answerQuery({ code: 1, sequence: 41n });
    const target = scriptedTarget(link);

    expect(await target.lastPublishingId()).toBe(41n);
    await settle();
    expect(link.declarations).toBe(1);

    const first = outcome(target.publish(42n, message));
    await settle();
    link.confirm(PUBLISHER_ID, 42n);
    expect(await first).toBe('confirmed');
    expect(link.declarations).toBe(1);
  });

  it('removes the producer it declared when closed, though it never published', async () => {
    const link = new ScriptedLink();
    link.answerQuery({ code: 1, sequence: 0n });
    const target = scriptedTarget(link);
    await target.lastPublishingId();
    await settle();

    await target.close();
    expect([link.declarations, link.deletions]).toEqual([1, 1]);
  });
});
