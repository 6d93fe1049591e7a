// The event-time job of the SIGKILL session test and of its child process: per-key sessions
// with a grace over out-of-order clicks of a few hundred users, and the clicks themselves,
// the same bytes whichever broker stores them.
import {
  aggregate,
  jsonMessage,
  type Runner,
  type Source,
  type Target,
} from '../../../src/index.js';
import { seededRandom } from '../arbitraries/seeded-random.js';

export const SESSIONS_PRODUCER = 'sessions-job';
const USERS = 300;
/** Event-time silence that ends a user's session, ms. */
const GAP = 300;
const GRACE = 100;
const MAX_OUT_OF_ORDERNESS = 200;
const T0 = Date.UTC(2026, 0, 1);

export interface Click {
  readonly user: number;
  readonly t: number;
  readonly v: number;
}

export interface SessionSummary {
  readonly clicks: number;
  /** The sum of the clicks' values (each value names its click: offset + 1). */
  readonly sum: number;
  /** The value of the session's first and last click as added (merged: the earlier's first). */
  readonly first: number;
  readonly last: number;
}

/**
 * `count` clicks. About 40 users are active at a time, and the active ones slide through all
 * USERS, so each user's sessions start, pause (a pause longer than GAP splits them) and close
 * as the stream goes on. Times advance 5 ms a click on average; most lie up to
 * MAX_OUT_OF_ORDERNESS behind the latest, and one in fifty up to 2 s behind: late, or
 * bridging two sessions of its user.
 */
export function clicks(count: number, seed = 12): Click[] {
  const random = seededRandom(seed);
  let base = T0;
  return Array.from({ length: count }, (_, i) => {
    base += Math.floor(random() * 11);
    const user = (Math.floor(i / 25) + Math.floor(random() * 40)) % USERS;
    const behind =
      random() < 0.02 ? Math.floor(random() * 2000) : Math.floor(random() * MAX_OUT_OF_ORDERNESS);
    return { user, t: base - behind, v: i + 1 };
  });
}

export const clickMessage = (click: Click): Uint8Array => jsonMessage(click);

/**
 * The job: each user's sessions, summarised; late clicks in the next result's late section.
 * `seen.merges` counts the sessions merged by a bridging click, to show the data has some.
 */
export function sessionsJob(
  source: Source,
  target: Target,
  seen: { merges: number } = { merges: 0 },
): Runner<Click, SessionSummary, SessionSummary> {
  return aggregate<Click>(source)
    .eventTime((c) => c.t)
    .key((c) => c.user)
    .session(GAP, { grace: GRACE })
    .maxOutOfOrderness(MAX_OUT_OF_ORDERNESS)
    .late('side')
    .aggregate<SessionSummary, SessionSummary>({
      init: () => ({ clicks: 0, sum: 0, first: 0, last: 0 }),
      add: (s, c) => ({
        clicks: s.clicks + 1,
        sum: s.sum + c.v,
        first: s.clicks === 0 ? c.v : s.first,
        last: c.v,
      }),
      merge: (a, b) => {
        seen.merges++;
        return {
          clicks: a.clicks + b.clicks,
          sum: a.sum + b.sum,
          first: a.first,
          last: b.last,
        };
      },
      result: (s) => s,
    })
    .to(target, { retryDelayMs: 10 });
}
