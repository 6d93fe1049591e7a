import type { Target } from '../src/index.js';

/** What the demo's "process" dies of. */
export class DemoCrash extends Error {}

/**
 * A target whose process dies at its `atPublish`-th publish: 'after-publish' lets the write
 * reach the broker and dies before the job sees the confirm; 'before-publish' dies first.
 * After that every call fails, as nothing runs after a real crash; only `release` still
 * reaches the broker, as a dead process's connection closing frees its producer name for the
 * job started after it.
 */
export function crashingTarget(
  target: Target,
  atPublish: number,
  point: 'before-publish' | 'after-publish',
): Target {
  let publishes = 0;
  let dead = false;
  const alive = () => {
    if (dead) throw new DemoCrash('the process is gone');
  };
  // Forwarded when the target has it: without it, a renamed partition producer goes unchecked.
  const lastOf = target.lastPublishingIdOf?.bind(target);
  return {
    stream: target.stream,
    producer: target.producer,
    maxWriteBytes: target.maxWriteBytes,
    lastPublishingId: async () => (alive(), target.lastPublishingId()),
    ...(lastOf === undefined
      ? {}
      : { lastPublishingIdOf: async (producer: string) => (alive(), lastOf(producer)) }),
    hasPublished: async () => (alive(), target.hasPublished()),
    readResult: async (publishingId) => (alive(), target.readResult(publishingId)),
    // Whether dead or not: a process that dies takes its connection, and so its producer, along.
    release: async () => target.release?.(),
    publish: async (publishingId, messages) => {
      alive();
      dead = ++publishes === atPublish;
      if (dead && point === 'before-publish')
        throw new DemoCrash(`crashed before publish ${atPublish}`);
      await target.publish(publishingId, messages);
      if (dead)
        throw new DemoCrash(`crashed after publish ${atPublish}, before its confirm was seen`);
    },
  };
}
