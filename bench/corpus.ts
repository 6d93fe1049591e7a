import { packChunk } from '../src/ports/pack-chunk.js';
import { encodeMessage } from '../src/codecs/amqp-message.js';
import { jsonMessage } from '../src/codecs/source-message.js';
import type { SourceChunk } from '../src/ports/ports.js';

/** A sensor reading, the value every hot-path and end-to-end case aggregates. */
export interface Reading {
  readonly sensor: string;
  readonly value: number;
}

export interface CorpusShape {
  readonly messages: number;
  readonly keys: number;
  /** Messages per burst; each burst fills exactly one 1-minute window (see `eventTimeOf`). */
  readonly windowMessages: number;
}

/** Messages per chunk, as the broker delivers a stream written in 500-message batches. */
export const CHUNK_MESSAGES = 500;
/** A minute boundary, so that bursts align with 1-minute tumbling windows. */
const EPOCH = Date.UTC(2025, 0, 1);
const MINUTE = 60_000;

/** At most ~16 windows, so every size closes windows many times, and no fewer than 10 messages each. */
export function corpusShape(messages: number, keys: number): CorpusShape {
  return { messages, keys, windowMessages: Math.max(10, Math.ceil(messages / 16)) };
}

/**
 * Event time of message `i`: bursts of `windowMessages` spread over one minute, each followed
 * by a minute of silence. So a 1-minute tumbling window, a session with a gap under a minute,
 * and a count window of `windowMessages` all end at the same messages, and every case of one
 * key count does the same work whatever its window kind.
 */
export function eventTimeOf(i: number, shape: CorpusShape): number {
  const burst = Math.floor(i / shape.windowMessages);
  const within = i - burst * shape.windowMessages;
  return EPOCH + burst * 2 * MINUTE + Math.floor((within * MINUTE) / shape.windowMessages);
}

/**
 * Deterministic readings: keys drawn by xorshift32 (uniform, not round-robin, so map lookups
 * see a realistic access pattern), values with one decimal so sums are doubles as real
 * sensor data would give.
 */
export function* readings(shape: CorpusShape): Generator<Reading> {
  const random = xorshift32();
  for (let i = 0; i < shape.messages; i++) {
    const drawn = random();
    yield { sensor: `sensor-${drawn % shape.keys}`, value: (drawn % 1000) / 10 };
  }
}

/**
 * Marsaglia's xorshift32 from a fixed seed: the same corpus every run, without the cost of a
 * general-purpose generator. Each call gives the next unsigned 32-bit number.
 */
export function xorshift32(): () => number {
  let state = 0x9e3779b9;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return state >>> 0;
  };
}

/**
 * The source stream as the broker would deliver it: AMQP messages with one JSON data section
 * and a creation time, packed CHUNK_MESSAGES at a time into one backing buffer per chunk.
 */
export function buildChunks(shape: CorpusShape): SourceChunk[] {
  checkEncoding({ sensor: 'sensor-0', value: 0.5 }, eventTimeOf(0, shape));
  const chunks: SourceChunk[] = [];
  let pending: Uint8Array[] = [];
  let index = 0;
  for (const reading of readings(shape)) {
    pending.push(encodeReading(reading, eventTimeOf(index, shape)));
    index++;
    if (pending.length === CHUNK_MESSAGES || index === shape.messages) {
      chunks.push(packChunk(BigInt(index - pending.length), EPOCH, pending));
      pending = [];
    }
  }
  return chunks;
}

/**
 * What `jsonMessage(reading, { creationTime })` writes, through `encodeMessage` directly:
 * jsonMessage's option handling costs ~15 µs a message against ~2.5 µs, which would make
 * building a 1M-message corpus take longer than measuring it. `checkEncoding` keeps the
 * two byte-identical.
 */
export function encodeReading(reading: Reading, creationTime: number): Uint8Array {
  return encodeMessage({
    properties: { contentType: 'application/json', creationTime },
    body: { type: 'data', sections: [Buffer.from(JSON.stringify(reading), 'utf8')] },
  });
}

/** Throws unless `encodeReading` writes exactly what a producer using jsonMessage writes. */
export function checkEncoding(reading: Reading, creationTime: number): void {
  const expected = Buffer.from(jsonMessage(reading, { creationTime }));
  if (!expected.equals(encodeReading(reading, creationTime))) {
    throw new Error('bench corpus: encodeReading no longer matches jsonMessage');
  }
}
