// A deliberately naive model of the event-time window semantics of issue 12, written straight
// from the rules (plain arrays, a full rescan of every open window at each message, no index,
// no incremental state) so that reading it is reading the spec. The engine is checked against
// it; it shares no code with src/.
//
// Per message, in offset order:
// 1. wm = (max event time seen so far) - maxOutOfOrderness, -Infinity before any time.
// 2. tumbling/hopping: a window [s, s + size) of t is closed iff end + grace <= wm; the message
//    is late iff every window of t is closed, else it joins (per key) each one that is not.
//    session: the proto window [t, t + gap] merges with every open session of its key that it
//    touches (t <= end && t + gap >= start); touching none, it is late iff
//    t + gap + grace <= wm, else it opens [t, t + gap).
//    count: the key's open window takes it and closes at its n-th message.
// 3. max time = max(max time, t) (late messages too; over several merged inputs, the merge
//    time instead of t); every open tumbling/hopping/session
//    window with end + grace <= the new wm closes.
// 4. if a window closed, one result is published for the step ending at this offset: the closed
//    windows sorted by (end, start, creation order), and the late / filtered messages read
//    since the previous result.
// Filtered messages only count: the filter runs before `.eventTime()` (README, "Filter, map and
// transform"), so they have no event time, move no watermark and join no window.

/** One source message; `offset` is its index in the stream (consecutive from 0). */
export interface ReferenceMessage {
  offset: number;
  key: string;
  time: number;
  value: number;
  /** Refused by the job's filter: counted in the result, nothing else. */
  filtered?: boolean;
  /**
   * Over several merged inputs (../models/merged-order.ts): the message's merge time, which
   * moves the watermark instead of `time` (the merge sorted the messages by it). Absent: `time`.
   */
  watermarkTime?: number;
}

export type ReferenceWindow =
  | { type: 'tumbling'; size: number; grace: number }
  | { type: 'hopping'; size: number; advance: number; grace: number }
  | { type: 'session'; gap: number; grace: number }
  | { type: 'count'; n: number };

export interface ReferenceConfig {
  window: ReferenceWindow;
  maxOutOfOrderness: number;
  late: 'drop' | 'side';
}

/** One closed (or, in {@link ReferenceRun.open}, still open) window of one key. */
export interface ReferenceOutput {
  key: string;
  start: number;
  end: number;
  count: number;
  sum: number;
}

export interface ReferenceResult {
  /** The offset at which the windows closed: the result's step's last offset (sw-last-offset). */
  decision: number;
  /** The previous result's decision + 1 (0 for the first result). */
  firstOffset: number;
  /** Messages read from firstOffset to decision, both included. */
  messages: number;
  outputs: ReferenceOutput[];
  /** Values of the late messages read since the previous result (policy 'side'). */
  late: number[];
  /** How many late messages were read since the previous result (policy 'drop'). */
  lateDropped: number;
  filtered: number;
}

/** What the messages after the last decision left pending: published by no result yet. */
export interface ReferencePending {
  firstOffset: number;
  messages: number;
  late: number[];
  lateDropped: number;
  filtered: number;
}

/** A whole run, with what the results alone do not show (for the invariants and coverage). */
export interface ReferenceRun {
  results: ReferenceResult[];
  /** Windows still open after the last message (never emitted), in output order. */
  open: ReferenceOutput[];
  pending: ReferencePending;
  /** Messages that bridged two or more open sessions of their key into one. */
  sessionMerges: number;
}

interface OpenWindow extends ReferenceOutput {
  /** Creation order: the tie-break of two windows with the same end and start. */
  created: number;
}

/** The results of `messages` under `config`, in publishing order. */
export function referenceRun(
  messages: readonly ReferenceMessage[],
  config: ReferenceConfig,
): ReferenceResult[] {
  return referenceRunDetailed(messages, config).results;
}

/** {@link referenceRun} with the open windows, the pending counts and the session merges. */
export function referenceRunDetailed(
  messages: readonly ReferenceMessage[],
  config: ReferenceConfig,
): ReferenceRun {
  checkConfig(config);
  const { window, maxOutOfOrderness } = config;
  const results: ReferenceResult[] = [];
  let open: OpenWindow[] = [];
  let created = 0;
  let maxTime = -Infinity;
  let sessionMerges = 0;
  let pending = emptyPending(0);

  messages.forEach((message, index) => {
    if (message.offset !== index) {
      throw new Error(`offsets must be consecutive from 0: message ${index} has ${message.offset}`);
    }
    pending.messages++;
    if (message.filtered === true) {
      // No event time: the watermark stays where it is, so nothing can close here either.
      pending.filtered++;
      return;
    }
    const { key, time: t, value } = message;
    const wm = maxTime - maxOutOfOrderness;
    const closed: OpenWindow[] = [];
    let late = false;

    if (window.type === 'tumbling' || window.type === 'hopping') {
      const advance = window.type === 'hopping' ? window.advance : window.size;
      const notClosed = windowStarts(t, window.size, advance).filter(
        (start) => start + window.size + window.grace > wm,
      );
      late = notClosed.length === 0;
      for (const start of notClosed) {
        let target = open.find((w) => w.key === key && w.start === start);
        if (target === undefined) {
          target = { key, start, end: start + window.size, count: 0, sum: 0, created: created++ };
          open.push(target);
        }
        target.count++;
        target.sum += value;
      }
    } else if (window.type === 'session') {
      const touched = open.filter((w) => w.key === key && t <= w.end && t + window.gap >= w.start);
      if (touched.length === 0) {
        late = t + window.gap + window.grace <= wm;
        if (!late) {
          open.push({
            key,
            start: t,
            end: t + window.gap,
            count: 1,
            sum: value,
            created: created++,
          });
        }
      } else {
        if (touched.length >= 2) sessionMerges++;
        open = open.filter((w) => !touched.includes(w));
        open.push({
          key,
          start: Math.min(t, ...touched.map((w) => w.start)),
          end: Math.max(t + window.gap, ...touched.map((w) => w.end)),
          count: 1 + touched.reduce((n, w) => n + w.count, 0),
          sum: value + touched.reduce((s, w) => s + w.sum, 0),
          // The merged session is as old as its oldest part (see the report's ambiguities).
          created: Math.min(...touched.map((w) => w.created)),
        });
      }
    } else {
      let target = open.find((w) => w.key === key);
      if (target === undefined) {
        target = { key, start: t, end: t + 1, count: 0, sum: 0, created: created++ };
        open.push(target);
      }
      target.start = Math.min(target.start, t);
      target.end = Math.max(target.end, t + 1);
      target.count++;
      target.sum += value;
      if (target.count === window.n) {
        closed.push(target);
        open = open.filter((w) => w !== target);
      }
    }

    if (late && config.late === 'side') pending.late.push(value);
    if (late && config.late === 'drop') pending.lateDropped++;

    maxTime = Math.max(maxTime, message.watermarkTime ?? t);
    if (window.type !== 'count') {
      const newWm = maxTime - maxOutOfOrderness;
      const grace = window.grace;
      closed.push(...open.filter((w) => w.end + grace <= newWm));
      open = open.filter((w) => w.end + grace > newWm);
    }

    if (closed.length > 0) {
      results.push({
        decision: message.offset,
        firstOffset: pending.firstOffset,
        messages: pending.messages,
        outputs: inOutputOrder(closed),
        late: pending.late,
        lateDropped: pending.lateDropped,
        filtered: pending.filtered,
      });
      pending = emptyPending(message.offset + 1);
    }
  });

  return { results, open: inOutputOrder(open), pending, sessionMerges };
}

/** Every s = k * advance with s <= t < s + size, the latest first. */
function windowStarts(t: number, size: number, advance: number): number[] {
  const starts: number[] = [];
  for (let start = Math.floor(t / advance) * advance; start + size > t; start -= advance) {
    starts.push(start);
  }
  return starts;
}

function inOutputOrder(windows: readonly OpenWindow[]): ReferenceOutput[] {
  return [...windows]
    .sort((a, b) => a.end - b.end || a.start - b.start || a.created - b.created)
    .map(({ key, start, end, count, sum }) => ({ key, start, end, count, sum }));
}

function emptyPending(firstOffset: number): ReferencePending {
  return { firstOffset, messages: 0, late: [], lateDropped: 0, filtered: 0 };
}

/** The model covers the configurations whose meaning the rules fix, and refuses the others. */
function checkConfig({ window, maxOutOfOrderness }: ReferenceConfig): void {
  const positive: [string, number][] = [];
  const nonNegative: [string, number][] = [['maxOutOfOrderness', maxOutOfOrderness]];
  if (window.type === 'count') positive.push(['n', window.n]);
  else nonNegative.push(['grace', window.grace]);
  if (window.type === 'session') positive.push(['gap', window.gap]);
  if (window.type === 'tumbling' || window.type === 'hopping') positive.push(['size', window.size]);
  if (window.type === 'hopping') positive.push(['advance', window.advance]);
  for (const [name, value] of positive) {
    if (!(value > 0)) throw new Error(`${name} must be > 0, given: ${value}`);
  }
  for (const [name, value] of nonNegative) {
    if (!(value >= 0)) throw new Error(`${name} must be >= 0, given: ${value}`);
  }
  // advance > size leaves times in no window at all: "late iff all its windows are closed"
  // would then call them late vacuously, a meaning the rules do not state.
  if (window.type === 'hopping' && window.advance > window.size) {
    throw new Error(`advance must be <= size, given: ${window.advance} > ${window.size}`);
  }
}
