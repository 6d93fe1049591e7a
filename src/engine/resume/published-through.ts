/*
 * What a producer's results cover of its source, as the run loop, `stream-windows status` and
 * `stream-windows skip` read it from the broker's last publishing id (./last-whole-step.ts):
 * one reading, so that where a job goes on with new messages, whether a stop or skip request
 * is still pending, and what a restart steps over again are decided alike everywhere. Where a
 * processor re-reads from to rebuild its state is its own rule (./resume-point.ts, rules 5
 * and 6); it never changes what was published.
 */

/**
 * The last source offset the producer's results cover: its last step's last offset, or -1
 * when it never published (`published`: ./last-whole-step.ts). Every message at or below it
 * was decided by a result already stored.
 */
export function publishedThrough(lastOffset: bigint, published: boolean): bigint {
  return published ? lastOffset : -1n;
}

/** The first source offset the producer's results do not cover: 'first' when none do. */
export function nextUnpublished(through: bigint): bigint | 'first' {
  return through < 0n ? 'first' : through + 1n;
}
