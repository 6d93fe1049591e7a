/**
 * The event-time rules of the shared semantics (tumbling windows with grace, one key), replayed
 * over a handful of messages so that the timeline picture draws numbers these rules produce,
 * not numbers placed by hand. Deliberately tiny and independent of src/: it is what the
 * picture explains, written as plainly as the rules read.
 */

export interface TimelineRules {
  /** Tumbling window size, ms. */
  readonly size: number;
  /** A window closes once the watermark reaches its end + grace, ms. */
  readonly grace: number;
  /** The watermark trails the maximum event time seen by this much, ms. */
  readonly maxOutOfOrderness: number;
}

/** A window [start, end) by its bounds, ms. */
export interface WindowBounds {
  readonly start: number;
  readonly end: number;
}

/** What happened at one source message, in offset order. */
export interface ReplayedMessage {
  readonly offset: number;
  readonly eventTime: number;
  readonly window: WindowBounds;
  /** Watermark before this message (decides lateness); -Infinity before any message. */
  readonly watermarkBefore: number;
  /** Watermark after this message (decides which windows close here). */
  readonly watermarkAfter: number;
  /** All of its windows were closed when it arrived. */
  readonly late: boolean;
}

/** One published result: the windows that closed at offset `publishingId`. */
export interface ReplayedResult {
  readonly publishingId: number;
  readonly closed: readonly WindowBounds[];
  readonly watermark: number;
  /** First offset any window still open after this result needs (publishingId + 1 if none). */
  readonly resumeOffset: number;
  /** Maximum event time of the messages before resumeOffset (undefined if none). */
  readonly resumeMaxEventTime: number | undefined;
}

export interface Replay {
  readonly messages: readonly ReplayedMessage[];
  readonly results: readonly ReplayedResult[];
}

interface OpenWindow extends WindowBounds {
  readonly firstOffset: number;
}

function windowOf(eventTime: number, size: number): WindowBounds {
  const start = Math.floor(eventTime / size) * size;
  return { start, end: start + size };
}

/** Replays `eventTimes` (index = offset) under `rules`. */
export function replayTumbling(eventTimes: readonly number[], rules: TimelineRules): Replay {
  const isClosed = (window: WindowBounds, watermark: number): boolean =>
    window.end + rules.grace <= watermark;
  const messages: ReplayedMessage[] = [];
  const results: ReplayedResult[] = [];
  let open: OpenWindow[] = [];
  let maxEventTime = -Infinity;
  eventTimes.forEach((eventTime, offset) => {
    const watermarkBefore = maxEventTime - rules.maxOutOfOrderness;
    const window = windowOf(eventTime, rules.size);
    const late = isClosed(window, watermarkBefore);
    if (!late && !open.some((w) => w.start === window.start)) {
      open.push({ ...window, firstOffset: offset });
    }
    maxEventTime = Math.max(maxEventTime, eventTime);
    const watermarkAfter = maxEventTime - rules.maxOutOfOrderness;
    messages.push({ offset, eventTime, window, watermarkBefore, watermarkAfter, late });
    const closed = open.filter((w) => isClosed(w, watermarkAfter));
    if (closed.length === 0) return;
    open = open.filter((w) => !isClosed(w, watermarkAfter));
    const resumeOffset = Math.min(offset + 1, ...open.map((w) => w.firstOffset));
    const before = eventTimes.slice(0, resumeOffset);
    results.push({
      publishingId: offset,
      closed: closed
        .sort((a, b) => a.end - b.end || a.start - b.start)
        .map(({ start, end }) => ({ start, end })),
      watermark: watermarkAfter,
      resumeOffset,
      resumeMaxEventTime: before.length === 0 ? undefined : Math.max(...before),
    });
  });
  return { messages, results };
}
