import type { ClientParams } from 'rabbitmq-stream-js-client';
import { RetentionGapError } from '../../common/errors.js';
import { findResultIn } from '../../result-format/stored-result.js';
import { messageAt } from '../../ports/chunk-message.js';
import type { MemberReach } from '../cluster/node-connection.js';
import { rabbitSource, type RabbitSource } from '../read/source.js';
import { readRange } from '../read/stream-range.js';

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

/** What a lookup found, and what it cost. */
export interface ResultLookup {
  /** The result message (a 'batch' result's first part); undefined when there is none. */
  readonly message: Uint8Array | undefined;
  /** Messages the broker delivered to the search (each one decoded). */
  readonly messagesRead: number;
  /** Windows read: each one subscription, on a connection of its own. */
  readonly windows: number;
}

/**
 * `producer`'s result published under `publishingId` on `stream` (the Target port's
 * `readResult`), searched for backward from the stream's end: RabbitMQ reads a stream only
 * forward, so the search reads windows of offsets, each twice the one after it (the last
 * 64 offsets, then the 128 before them, ...), each from its first offset up to where the
 * window after it starts, where the read is aborted.
 *
 * One producer's results lie in increasing id order along the stream, so a window holding
 * an earlier result of `producer` is the last one read: the wanted result, if stored, is in
 * it or after it. The search also ends at the stream's first offset still stored (what
 * retention removed cannot be found).
 *
 * Cost, with d the messages stored after the wanted result (or, for an absent one, after the
 * producer's result before it): at most about 2d + 64 messages delivered and decoded (plus
 * the rest of the chunk the result is in), in at most log2(d / 64 + 1) + 1 windows (one more
 * for a 'batch' result a window cut, or for a window retention cut), whatever other
 * producers write to the stream; plus one end-offset query (two connections). An id this
 * producer never published, with no earlier result of it, costs a read of the whole stream.
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
): Promise<ResultLookup> {
  const search = new BackwardSearch(
    rabbitSource(stream, { ...reach, connection: params, timeoutMs }),
    producer,
    publishingId,
    timeoutMs,
  );
  return search.run();
}

/** A result found in a window: its offset and 'batch' part number. */
interface Found {
  readonly offset: bigint;
  readonly part: number;
  readonly message: Uint8Array;
}

class BackwardSearch {
  private messagesRead = 0;
  private windows = 0;

  constructor(
    private readonly source: RabbitSource,
    private readonly producer: string,
    private readonly publishingId: bigint,
    private readonly timeoutMs: number,
  ) {}

  async run(): Promise<ResultLookup> {
    let until = await this.source.endOffset();
    let floor = 0n;
    let size = FIRST_WINDOW;
    while (until > floor) {
      const from = until - size > floor ? until - size : floor;
      let window: { found?: Found; earlier: boolean };
      try {
        window = await this.read(from, until);
      } catch (error) {
        if (!(error instanceof RetentionGapError)) throw error;
        floor = error.firstAvailable; // the same window again, from the first offset stored
        continue;
      }
      if (window.found !== undefined) return this.answer(await this.firstPart(window.found));
      if (window.earlier) break;
      until = from;
      size *= GROWTH;
    }
    return this.answer(undefined);
  }

  /**
   * The window cut a 'batch' result, whose parts are consecutive offsets of one chunk,
   * when the part found first is not part 0: part 0 is read on its own then.
   */
  private async firstPart(found: Found): Promise<Uint8Array> {
    if (found.part === 0) return found.message;
    const first = found.offset - BigInt(found.part);
    try {
      const window = await this.read(first, found.offset);
      return window.found?.message ?? found.message;
    } catch (error) {
      // Retention removed it meanwhile: any part carries the step's properties.
      if (error instanceof RetentionGapError) return found.message;
      throw error;
    }
  }

  private async read(from: bigint, until: bigint): Promise<{ found?: Found; earlier: boolean }> {
    this.windows++;
    let found: Found | undefined;
    let earlier = false;
    await readRange(this.source, from, until, this.timeoutMs, (chunk, count) => {
      this.messagesRead += count;
      const finding = findResultIn(chunk, count, this.producer, this.publishingId);
      if ('index' in finding) {
        found = {
          offset: chunk.firstOffset + BigInt(finding.index),
          part: finding.part,
          message: messageAt(chunk, finding.index),
        };
        return true;
      }
      earlier ||= finding.earlier;
      return false;
    });
    return found === undefined ? { earlier } : { found, earlier };
  }

  private answer(message: Uint8Array | undefined): ResultLookup {
    return { message, messagesRead: this.messagesRead, windows: this.windows };
  }
}
