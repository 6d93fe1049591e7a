import type { ClientParams } from 'rabbitmq-stream-js-client';
import { RetentionGapError, SourceError } from '../../common/errors.js';
import { findResultIn } from '../../result-format/stored-result.js';
import { messageAt } from '../../ports/chunk-message.js';
import type { ResultWhere, Source, SourceChunk } from '../../ports/ports.js';
import type { MemberReach } from '../cluster/node-connection.js';
import { firstOffsetAt } from '../read/chunk-at-time.js';
import { rabbitSource } from '../read/source.js';
import { readRange } from '../read/stream-range.js';
import { chunkEnd, lastChunk } from '../read/source-end-offset.js';
import { sliceOf } from '../../ports/chunk-slice.js';

/** The first window: the stream's last 64 offsets. */
const FIRST_WINDOW = 64n;
/**
 * Each window further back holds twice the offsets of the one after it. Reading dominates
 * the cost (measured on RabbitMQ 4.0.5, a loaded 2-core machine: 7,000 to 20,000 result
 * messages a second, against about 25 ms per window for its connection and subscription),
 * so the bound on messages read (2d + 64, see `lookUpResult`) matters more than the windows'
 * number: growing 4 times a window, a result 100,000 results back took 38 s (336,864 read),
 * twice, 14 s (96,480 read).
 */
const GROWTH = 2n;

/**
 * The windows a search reads to reach `distance` offsets back from the stream's end: how
 * many, how far back they reach together, and the size of the last (for the bench and the
 * tests, which lay results out against them).
 */
export function windowsReaching(distance: number): {
  windows: number;
  reach: number;
  lastSize: number;
} {
  let lastSize = Number(FIRST_WINDOW);
  let reach = lastSize;
  let windows = 1;
  while (reach < distance) {
    lastSize *= Number(GROWTH);
    reach += lastSize;
    windows++;
  }
  return { windows, reach, lastSize };
}

/**
 * What a hint (./result-hint.ts) did for a lookup: `'unusable'`,
 * it lay past the stream's end or retention had removed it, so the search went back from the
 * end as without one; `'at-hint'`, the result was in the chunk at the hint; `'before-hint'`,
 * found searching back from that chunk; `'after-hint'`, searched for reading on from it (an
 * older result of the producer lay at or before the hint, or nothing of it before).
 */
export type HintUse = 'unusable' | 'at-hint' | 'before-hint' | 'after-hint';

/**
 * What a time bound (`ResultWhere.writtenAfterMs`) did for a lookup without a usable hint:
 * `'unusable'`, no chunk is stamped at or after it (a skewed clock, another job's source), so
 * the search went back from the end as without one; `'after-time'`, found reading on from the
 * first chunk stamped at or after it; `'before-time'`, not there, searched back from that chunk.
 */
export type TimeUse = 'unusable' | 'after-time' | 'before-time';

/**
 * Where a read by time starts: the first offset of the first chunk stamped at or after
 * `timestampMs`, undefined when it cannot be had (the search goes on without it). A retriable
 * `SourceError` (a refused or lost subscription, a leader being elected) counts as cannot be
 * had; a final one (the stream deleted) is thrown on, as the search's next read would meet it.
 */
export type TimeSeek = (timestampMs: number) => Promise<bigint | undefined>;

/** A time bound, asked only when no hint answered, and how to seek the stream by time. */
export interface TimeBound {
  readonly writtenAfterMs: () => Promise<number | undefined>;
  readonly seek: TimeSeek;
}

/** What a lookup found, and what it cost. */
export interface ResultLookup {
  /** The result message (a 'batch' result's first part); undefined when there is none. */
  readonly message: Uint8Array | undefined;
  /** Messages the broker delivered to the search (each one decoded). */
  readonly messagesRead: number;
  /** Reads made: each one subscription, on a connection of its own. */
  readonly windows: number;
  /** What the hint did; absent when none was given. */
  readonly hint?: HintUse;
  /** What the time bound did; absent when none was known or a usable hint answered first. */
  readonly time?: TimeUse;
}

/**
 * `producer`'s result published under `publishingId` on `stream` (the Target port's
 * `readResult`), searched for from `hint` when one is given, else backward from the stream's
 * end: RabbitMQ reads a stream only forward, so the backward search reads windows of offsets,
 * each twice the one after it (the last 64 offsets, then the 128 before them, ...), each from
 * its first offset up to where the window after it starts, where the read is aborted.
 *
 * One producer's results lie in increasing id order along the stream, so a window holding
 * an earlier result of `producer` is the last one read: the wanted result, if stored, is in
 * it or after it. The search also ends at the stream's first offset still stored (what
 * retention removed cannot be found).
 *
 * Cost without a hint, with d the messages stored after the wanted result (or, for an absent
 * one, after the producer's result before it): at most about 2d + 64 messages delivered and
 * decoded (plus the rest of the chunk the result is in), in at most log2(d / 64 + 1) + 1
 * windows (one more for a 'batch' result a window cut, or for a window retention cut),
 * whatever other producers write to the stream; plus one end-offset query (two connections).
 * An id this producer never published, with no earlier result of it, costs a read of the
 * whole stream.
 *
 * With a hint h below the stream's end, the chunk at h is read first. The result in it: one
 * read, whatever lies after it. An older result of `producer` in it: the wanted one lies after,
 * and is read on for from the chunk's end (the messages up to it: what every producer wrote
 * between the two). Neither: the backward search runs from the chunk's end instead of the
 * stream's, then, if it stops at an older result of `producer` or at the stream's head, reads
 * on from there. Every answer is checked by the result's own properties, so a hint changes only
 * the cost: a hint at or just after the producer's last result costs one or two short reads
 * (d above is counted from the hint then); one past the end, or removed by retention, costs
 * the search without a hint; a wrong one at worst a read of the whole stream, as an absent id.
 *
 * Without a usable hint, a time bound (`where.writtenAfterMs`: the result was written at or
 * after it; asked only then, as it costs the caller a read of its source) is used when the stream's last message's chunk is stamped at or after it (one
 * short read, which also looks at that message): the read attaches at the first chunk stamped
 * at or after it (RabbitMQ's timestamp offset spec, one more subscription) and reads on to the
 * wanted result, or to a later result of `producer` or the end, then searches back from that
 * chunk as from the end. Cost: what was stored from the bound's chunk to the result, whatever
 * came after. A bound that is wrong costs at most a read from its chunk to the end on top of
 * the search without one; a bound later than every chunk, only the short read.
 * `timeoutMs` bounds each connect, subscribe and wait for a chunk (see ../read/stream-range.ts);
 * failures are the source's `SourceError`s.
 */
export async function lookUpResult(
  params: ClientParams,
  stream: string,
  producer: string,
  publishingId: bigint,
  timeoutMs: number,
  reach: MemberReach = {},
  hint?: bigint,
  where: ResultWhere = {},
): Promise<ResultLookup> {
  const source = rabbitSource(stream, { ...reach, connection: params, timeoutMs });
  const { writtenAfterMs } = where;
  const time: TimeBound | undefined =
    writtenAfterMs === undefined
      ? undefined
      : {
          writtenAfterMs,
          seek: (timestampMs: number) =>
            firstOffsetAt(params, stream, timestampMs, timeoutMs, reach),
        };
  const tail = (): Promise<SourceChunk | undefined> => lastChunk(params, stream, timeoutMs, reach);
  return searchResult(source, producer, publishingId, timeoutMs, hint, time, tail);
}

/**
 * The stream's last chunk of messages, read for its end (../read/source-end-offset.ts), so
 * that the search's look at the stream's last message needs no read of its own; undefined
 * when the stream holds none.
 */
export type StreamTail = () => Promise<SourceChunk | undefined>;

/**
 * `lookUpResult` over any source of the stream (the unit tests read an embedded one); without
 * `tail`, the end is the source's `endOffset()` and the last message a read of its own.
 */
export function searchResult(
  source: Source,
  producer: string,
  publishingId: bigint,
  timeoutMs: number,
  hint?: bigint,
  time?: TimeBound,
  tail?: StreamTail,
): Promise<ResultLookup> {
  return new ResultSearch(source, producer, publishingId, timeoutMs).run(hint, time, tail);
}

/** `seek(timestampMs)`, undefined when it failed retriably (see TimeSeek). */
async function seekOrNone(seek: TimeSeek, timestampMs: number): Promise<bigint | undefined> {
  try {
    return await seek(timestampMs);
  } catch (error) {
    if (error instanceof SourceError && error.retriable) return undefined;
    throw error;
  }
}

/** A result found in a window: its offset and 'batch' part number. */
interface Found {
  readonly offset: bigint;
  readonly part: number;
  readonly message: Uint8Array;
}

/** What one read of a range found: the result, or whether an earlier result of ours was in it. */
interface RangeFinding {
  readonly found?: Found;
  readonly earlier: boolean;
  /** One past the last offset read. */
  readonly next: bigint;
  /** The timestamp of the last chunk read (NaN when none was). */
  readonly timestamp: number;
}

/** What one chunk held: the result, or whether an earlier or later result of ours is in it. */
interface ChunkFinding {
  readonly found?: Found;
  readonly earlier: boolean;
  readonly later: boolean;
  readonly next: bigint;
  readonly timestamp: number;
}

class ResultSearch {
  private messagesRead = 0;
  private windows = 0;

  constructor(
    private readonly source: Source,
    private readonly producer: string,
    private readonly publishingId: bigint,
    private readonly timeoutMs: number,
  ) {}

  async run(
    hint: bigint | undefined,
    time: TimeBound | undefined,
    tail: StreamTail | undefined,
  ): Promise<ResultLookup> {
    const lastChunk = await tail?.();
    const end = tail === undefined ? await this.source.endOffset() : chunkEnd(lastChunk);
    if (hint !== undefined && hint < end) {
      const hinted = await this.fromHint(hint, end);
      if (hinted !== undefined) return hinted;
    }
    const hintUse = hint === undefined ? {} : { hint: 'unusable' as const };
    // The stream's last message first: a producer's result is most often there (a restart of
    // the only writer, a failover), and finding it there makes the bound needless.
    const last =
      time === undefined || end === 0n
        ? undefined
        : lastChunk === undefined
          ? await this.readOrRemoved(end - 1n, end)
          : this.look(sliceOf(lastChunk, lastChunk.count - 1, lastChunk.count));
    if (last?.found !== undefined) {
      return this.answer(await this.firstPart(last.found), { ...hintUse, time: 'after-time' });
    }
    // Asked only now: on RabbitMQ the bound is a read of the source.
    const writtenAfterMs = await time?.writtenAfterMs();
    if (time !== undefined && last !== undefined && writtenAfterMs !== undefined) {
      const timed = await this.fromTime(writtenAfterMs, time.seek, end, last, hintUse);
      if (timed !== undefined) return timed;
    }
    const found = await this.backward(end);
    const message = found === undefined ? undefined : await this.firstPart(found);
    const timeUse = writtenAfterMs === undefined ? {} : { time: 'unusable' as const };
    return this.answer(message, { ...hintUse, ...timeUse });
  }

  /**
   * The search from the first chunk stamped at or after `writtenAfterMs`, `last` being the
   * stream's last chunk read (without the result); undefined when no chunk up to the
   * stream's last message is so stamped (or the seek failed to find one).
   */
  private async fromTime(
    writtenAfterMs: number,
    seek: TimeSeek,
    end: bigint,
    last: RangeFinding,
    hintUse: { readonly hint?: HintUse },
  ): Promise<ResultLookup | undefined> {
    // Later than the last chunk: osiris would attach the read past the end, and wait there.
    if (!(last.timestamp >= writtenAfterMs)) return undefined;
    const from = await seekOrNone(seek, writtenAfterMs);
    if (from === undefined || from >= end) return undefined;
    const after = await this.forward(from, end);
    if (after !== undefined) {
      return this.answer(await this.firstPart(after), { ...hintUse, time: 'after-time' });
    }
    const before = await this.backward(from);
    const message = before === undefined ? undefined : await this.firstPart(before);
    return this.answer(message, { ...hintUse, time: 'before-time' });
  }

  /** The search from the chunk at `hint`; undefined when retention removed it. */
  private async fromHint(hint: bigint, end: bigint): Promise<ResultLookup | undefined> {
    const atHint = await this.readOrRemoved(hint, end);
    if (atHint === undefined) return undefined;
    if (atHint.found !== undefined) {
      return this.answer(await this.firstPart(atHint.found), { hint: 'at-hint' });
    }
    if (!atHint.earlier) {
      const before = await this.backward(atHint.next);
      if (before !== undefined) {
        return this.answer(await this.firstPart(before), { hint: 'before-hint' });
      }
    }
    const after = await this.forward(atHint.next, end);
    const message = after === undefined ? undefined : await this.firstPart(after);
    return this.answer(message, { hint: 'after-hint' });
  }

  /** The first chunk from `from` (below `end`); undefined when retention removed `from`. */
  private async readOrRemoved(from: bigint, end: bigint): Promise<RangeFinding | undefined> {
    try {
      return await this.read(from, end, true);
    } catch (error) {
      if (error instanceof RetentionGapError) return undefined;
      throw error;
    }
  }

  /**
   * Back from `until` in growing windows, to the wanted result or to the first window holding
   * an earlier result of ours or the stream's head: undefined then.
   */
  private async backward(until: bigint): Promise<Found | undefined> {
    let floor = 0n;
    let size = FIRST_WINDOW;
    while (until > floor) {
      const from = until - size > floor ? until - size : floor;
      let window: RangeFinding;
      try {
        window = await this.read(from, until, false);
      } catch (error) {
        if (!(error instanceof RetentionGapError)) throw error;
        floor = error.firstAvailable; // the same window again, from the first offset stored
        continue;
      }
      if (window.found !== undefined) return window.found;
      if (window.earlier) return undefined;
      until = from;
      size *= GROWTH;
    }
    return undefined;
  }

  /**
   * On from `from` to `end`, to the wanted result; undefined when it is not there (up to a
   * later result of ours, past which it is not).
   */
  private async forward(from: bigint, end: bigint): Promise<Found | undefined> {
    if (from >= end) return undefined;
    try {
      return (await this.read(from, end, false, true)).found;
    } catch (error) {
      // Removed meanwhile: what was removed cannot be found, the rest can.
      if (!(error instanceof RetentionGapError)) throw error;
      return this.forward(error.firstAvailable, end);
    }
  }

  /**
   * The window cut a 'batch' result, whose parts are consecutive offsets of one chunk,
   * when the part found first is not part 0: part 0 is read on its own then.
   */
  private async firstPart(found: Found): Promise<Uint8Array> {
    if (found.part === 0) return found.message;
    const first = found.offset - BigInt(found.part);
    try {
      const window = await this.read(first, found.offset, false);
      return window.found?.message ?? found.message;
    } catch (error) {
      // Retention removed it meanwhile: any part carries the step's properties.
      if (error instanceof RetentionGapError) return found.message;
      throw error;
    }
  }

  /**
   * Reads [`from`, `until`) to the wanted result, or only the first chunk when `oneChunk`, or
   * when `toLater` only to a later result of ours (nothing after it holds the wanted one).
   */
  private async read(
    from: bigint,
    until: bigint,
    oneChunk: boolean,
    toLater = false,
  ): Promise<RangeFinding> {
    this.windows++;
    let found: Found | undefined;
    let earlier = false;
    let next = from;
    let timestamp = Number.NaN;
    await readRange(this.source, from, until, this.timeoutMs, (chunk, count) => {
      const finding = this.find(chunk, count);
      ({ next, timestamp } = finding);
      if (finding.found !== undefined) {
        found = finding.found;
        return true;
      }
      earlier ||= finding.earlier;
      return oneChunk || (toLater && finding.later);
    });
    return found === undefined ? { earlier, next, timestamp } : { found, earlier, next, timestamp };
  }

  /** What the messages of `chunk`, handed to the search (not read by it), hold. */
  private look(chunk: SourceChunk): RangeFinding {
    const { found, earlier, next, timestamp } = this.find(chunk, chunk.count);
    return found === undefined ? { earlier, next, timestamp } : { found, earlier, next, timestamp };
  }

  /** What the first `count` messages of `chunk` hold; each counts as read. */
  private find(chunk: SourceChunk, count: number): ChunkFinding {
    this.messagesRead += count;
    const next = chunk.firstOffset + BigInt(count);
    const { timestamp } = chunk;
    const finding = findResultIn(chunk, count, this.producer, this.publishingId);
    if (!('index' in finding)) return { ...finding, next, timestamp };
    const found = {
      offset: chunk.firstOffset + BigInt(finding.index),
      part: finding.part,
      message: messageAt(chunk, finding.index),
    };
    return { found, earlier: false, later: false, next, timestamp };
  }

  private answer(
    message: Uint8Array | undefined,
    uses: { readonly hint?: HintUse; readonly time?: TimeUse } = {},
  ): ResultLookup {
    const { messagesRead, windows } = this;
    return { message, messagesRead, windows, ...uses };
  }
}
