import { decodeMessage } from '../codecs/amqp-message.js';
import { CodecError } from '../codecs/codec-error.js';
import type { SourceChunk } from '../ports/ports.js';
import { ResultProperty } from './result-format.js';
import { MAX_STEP_WRITES, writePosition } from './publishing-id.js';

/**
 * Recognising one producer's results among what a target stream stores, for the adapters'
 * `hasPublished` and `readResult` (the Target port). A result names its producer and the step
 * it belongs to in its application properties (`sw-producer`, `sw-last-offset`), and, when the
 * step took several writes, its write's publishing id (`sw-write-id`); a step of one write has
 * its last write's id (./publishing-id.ts).
 */

/**
 * The application properties of message `index` of `chunk`; undefined when it has none or
 * is not an AMQP 1.0 message at all (another writer's, never a result).
 */
export function storedProperties(
  chunk: SourceChunk,
  index: number,
): Record<string, unknown> | undefined {
  try {
    return decodeMessage(chunk.bytes, chunk.starts[index], chunk.ends[index]).applicationProperties;
  } catch (error) {
    if (error instanceof CodecError) return undefined;
    throw error;
  }
}

/** What `properties` say of the message, next to `producer`'s result `publishingId`. */
type ResultPlace =
  | 'wanted'
  /** A result of `producer` with a lower publishing id: stored before the wanted one. */
  | 'earlier'
  /** A result of `producer` with a higher publishing id: stored after the wanted one. */
  | 'later'
  /** Anything else: another producer's result, no result. */
  | 'other';

const DECIMAL = /^(0|[1-9][0-9]*)$/;

function resultPlace(
  properties: Record<string, unknown> | undefined,
  producer: string,
  wanted: { readonly offset: bigint; readonly write: number },
): ResultPlace {
  if (properties?.[ResultProperty.producer] !== producer) return 'other';
  const last = properties[ResultProperty.lastOffset];
  const writeId = properties[ResultProperty.writeId];
  // Not one of our results after all: nothing to order it by.
  if (typeof last !== 'string' || !DECIMAL.test(last)) return 'other';
  if (writeId !== undefined && (typeof writeId !== 'string' || !DECIMAL.test(writeId))) {
    return 'other';
  }
  const offset = BigInt(last);
  const write = writeId === undefined ? MAX_STEP_WRITES : writePosition(BigInt(writeId)).write;
  if (offset === wanted.offset && write === wanted.write) return 'wanted';
  return offset < wanted.offset || (offset === wanted.offset && write < wanted.write)
    ? 'earlier'
    : 'later';
}

/** What one run of consecutive stored messages says of `producer`'s result `publishingId`. */
export type RunFinding =
  /** The first message of the run that is the wanted write, and its part number in the step. */
  | { readonly index: number; readonly part: number }
  /**
   * Not in the run; `earlier`: an earlier result of `producer` is, so nothing before the run
   * holds it; `later`: a later one is, so nothing after the run does.
   */
  | { readonly earlier: boolean; readonly later: boolean };

/**
 * Looks through messages 0 .. `count` - 1 of `chunk`, in offset order, for `producer`'s
 * result `publishingId`. One producer's results are stored in increasing id order, so a
 * search going backward through the stream stops at the first run that holds an earlier one.
 */
export function findResultIn(
  chunk: SourceChunk,
  count: number,
  producer: string,
  publishingId: bigint,
): RunFinding {
  let earlier = false;
  let later = false;
  const wanted = writePosition(publishingId);
  for (let index = 0; index < count; index++) {
    const properties = storedProperties(chunk, index);
    const place = resultPlace(properties, producer, wanted);
    if (place === 'wanted') return { index, part: partOf(properties) };
    if (place === 'earlier') earlier = true;
    if (place === 'later') later = true;
  }
  return { earlier, later };
}

/**
 * A message's part number among its step's (0 for a step of one message): how far back the
 * first message of its write lies at most.
 */
function partOf(properties: Record<string, unknown> | undefined): number {
  const part = properties?.[ResultProperty.part];
  return typeof part === 'string' && DECIMAL.test(part) ? Number(part) : 0;
}
