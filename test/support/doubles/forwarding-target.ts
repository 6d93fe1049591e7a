// The base of the test targets that watch or disturb a real one.
import type { Target } from '../../../src/index.js';

/** A target that hands every call to `target`: spread it and override what a test changes. */
export function forwarding(target: Target): Target {
  return {
    stream: target.stream,
    producer: target.producer,
    maxWriteBytes: target.maxWriteBytes,
    lastPublishingId: () => target.lastPublishingId(),
    lastPublishingIdOf: (producer) => target.lastPublishingIdOf?.(producer) ?? Promise.resolve(0n),
    hasPublished: () => target.hasPublished(),
    readResult: (publishingId, where) => target.readResult(publishingId, where),
    publish: (id, messages) => target.publish(id, messages),
    release: () => target.release?.() ?? Promise.resolve(),
  };
}
