import type { LastResult } from './last-result.js';
import type { ResumeAt, ResumeStart } from './resume-point.js';

/**
 * Rule 6 of ./resume-point.ts: where a step job that flushes resumes, and the window it goes
 * on with. A flush ends a step before its window: the producer's last result may be such a
 * step, and its window (the bounds it carries) is reopened (`reopen`), so that the next step
 * tells whether it continues it. `result`: the last result when the job reads it (a window
 * with event-time bounds, in the library's format), else undefined. A missing or unreadable
 * result costs only that mark (every message is in one result either way), so it is a
 * warning. And a flushed step of offset 0 alone is no step a read from 'first' makes again:
 * the job resumes at 1 whenever the producer published.
 */
export async function resumeAfterFlush(
  start: ResumeStart,
  result: LastResult | undefined,
  window: string,
  reopen: (bounds: { readonly start: number; readonly end: number }) => void,
): Promise<ResumeAt> {
  const { last, lastId } = start;
  let unread: string | undefined;
  if (result?.kind === 'read') {
    const { header } = result;
    const { windowStart, windowEnd } = header;
    // Written by another window (the job changed): nothing of it goes on.
    const sameWindow = header.window === window;
    if (header.flushed && sameWindow && windowStart !== undefined && windowEnd !== undefined) {
      reopen({ start: windowStart, end: windowEnd });
    }
  } else if (result?.kind === 'unreadable') {
    unread = `cannot be read (${result.reason})`;
  } else if (result?.kind === 'missing' && lastId !== 0n) {
    unread = 'is not in the target (removed by retention, or the name was used by another job)';
  }
  if (unread !== undefined) {
    start.warn(
      `the producer's last result ${unread}: a window it flushed is not reopened, so the next step is not marked as continuing it`,
    );
  }
  if (lastId !== 0n) return { from: last + 1n, published: true, atOneAfterRetention: true };
  // A result under id 0 (an earlier version's, for offset 0), readable or not, was published.
  const published =
    (result !== undefined && result.kind !== 'missing') || (await start.hasPublished());
  return { from: published ? 1n : 'first', published, atOneAfterRetention: true };
}
