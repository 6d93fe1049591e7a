// The resume point of the RabbitMQ target: a broker refusal is a typed error carrying the
// response code, retriable exactly when the condition passes by itself, so the runner retries
// a stream that is between leaders and stops on one that does not exist.
import { describe, expect, it } from 'vitest';
import { isRetriable, ResumePointError } from '../../../../src/common/errors.js';
import { aggregate } from '../../../../src/dsl/pipeline.js';
import { MemoryBroker } from '../../../../src/memory/index.js';
import {
  STREAM_DOES_NOT_EXIST,
  STREAM_NOT_AVAILABLE,
} from '../../../../src/common/stream-protocol.js';
import { ScriptedLink, scriptedTarget, settle } from '../scripted-link.js';

/** A job from an empty embedded stream to the scripted target: it only asks the resume point. */
function jobAsking(link: ScriptedLink) {
  const broker = new MemoryBroker();
  broker.createStream('in');
  return aggregate(broker.source('in'))
    .count(1)
    .reduce((n) => n + 1, 0)
    .to(scriptedTarget(link), { retryDelayMs: 0 })
    .run({ untilCaughtUp: true });
}

async function refusal(code: number): Promise<unknown> {
  const link = new ScriptedLink();
  link.answerQuery({ code });
  return scriptedTarget(link)
    .lastPublishingId()
    .catch((error: unknown) => error);
}

describe('the resume point of a RabbitMQ target', () => {
  it('is the sequence the broker answers', async () => {
    const link = new ScriptedLink();
    link.answerQuery({ code: 1, sequence: 41n });
    expect(await scriptedTarget(link).lastPublishingId()).toBe(41n);
  });

  it("declares no producer: a watcher with the job's producer name asks it too", async () => {
    const link = new ScriptedLink();
    link.answerQuery({ code: 1, sequence: 41n });
    const target = scriptedTarget(link);
    await target.lastPublishingId();
    await settle();
    expect(link.declarations).toBe(0);
    await target.close();
    expect(link.deletions).toBe(0);
  });

  it('fails with a non-retriable ResumePointError, code 2, when the stream does not exist', async () => {
    const error = await refusal(STREAM_DOES_NOT_EXIST);

    expect(error).toBeInstanceOf(ResumePointError);
    expect(error).toMatchObject({
      responseCode: 2,
      retriable: false,
      stream: 'out',
      producer: 'job',
    });
    expect(isRetriable(error)).toBe(false);
    expect((error as Error).message).toContain('stream does not exist');
  });

  it('fails with a retriable ResumePointError, code 6, while the stream is not available', async () => {
    const error = await refusal(STREAM_NOT_AVAILABLE);

    expect(error).toBeInstanceOf(ResumePointError);
    expect(error).toMatchObject({ responseCode: 6, retriable: true });
    expect(isRetriable(error)).toBe(true);
  });

  it('fails with a non-retriable ResumePointError when access is refused', async () => {
    const error = await refusal(0x10);

    expect(error).toMatchObject({ name: 'ResumePointError', responseCode: 0x10, retriable: false });
  });

  it('makes a job retry while the stream is not available', async () => {
    const link = new ScriptedLink();
    link.answerQuery({ code: STREAM_NOT_AVAILABLE });
    link.answerQuery({ code: 1, sequence: 0n });

    expect(await jobAsking(link)).toEqual({ results: 0, duplicates: 0, restarts: 1 });
  });

  it('makes a job stop when the stream does not exist', async () => {
    const link = new ScriptedLink();
    link.answerQuery({ code: STREAM_DOES_NOT_EXIST });

    await expect(jobAsking(link)).rejects.toMatchObject({
      name: 'ResumePointError',
      responseCode: 2,
    });
  });
});
