import { packChunk } from '../../src/ports/pack-chunk.js';
import type { SourceChunk } from '../../src/ports/ports.js';
import { MemoryBroker } from '../../src/memory/broker.js';
import { CHUNK_MESSAGES, encodeReading, xorshift32, type Reading } from '../corpus.js';

export const EPOCH = Date.UTC(2025, 0, 1);
export const MINUTE = 60_000;

/**
 * A source for event-time windows with a known number of OPEN keys: every key appears in
 * every run of `keys` consecutive messages (a fixed permutation of the keys, not round-robin
 * order), so once a window period has seen `keys` messages, that many keys have a window open.
 */
export interface OpenKeysShape {
  readonly messages: number;
  readonly keys: number;
  /** Messages per window period (at least `keys`, so that all keys are open at once). */
  readonly windowMessages: number;
  /**
   * 'bursts': each period's messages spread over one minute, then a minute of silence (so a
   * 1-minute session of every key is open at the burst's end and closes before the next).
   * 'continuous': back-to-back minutes, for windows that stay open while the next one fills.
   */
  readonly timeline: 'bursts' | 'continuous';
  /** Out-of-order jitter: up to this many ms earlier than in-order time, never before the period's start. */
  readonly disorderMs: number;
}

/** The same stride for every key count: coprime to it, so `i * stride mod keys` visits every key. */
function strideFor(keys: number): number {
  const prime = 7_919;
  return keys % prime === 0 ? 1 : prime;
}

/** Readings with their event times, in offset order. */
function* timedReadings(shape: OpenKeysShape): Generator<{ reading: Reading; time: number }> {
  const stride = strideFor(shape.keys);
  const period = shape.timeline === 'bursts' ? 2 * MINUTE : MINUTE;
  const next = xorshift32();
  for (let i = 0; i < shape.messages; i++) {
    const random = next();
    const window = Math.floor(i / shape.windowMessages);
    const within = i - window * shape.windowMessages;
    const start = EPOCH + window * period;
    const inOrder = start + Math.floor((within * MINUTE) / shape.windowMessages);
    const jitter = shape.disorderMs === 0 ? 0 : random % shape.disorderMs;
    yield {
      reading: { sensor: `sensor-${(i * stride) % shape.keys}`, value: (random % 1000) / 10 },
      time: Math.max(start, inOrder - jitter),
    };
  }
}

/** The encoded messages, CHUNK_MESSAGES at a time, the event time as creation time. */
function* batches(shape: OpenKeysShape): Generator<Uint8Array[]> {
  let pending: Uint8Array[] = [];
  for (const { reading, time } of timedReadings(shape)) {
    pending.push(encodeReading(reading, time));
    if (pending.length === CHUNK_MESSAGES) {
      yield pending;
      pending = [];
    }
  }
  if (pending.length > 0) yield pending;
}

/** The messages as the broker delivers them, one backing buffer per chunk. */
export function buildOpenKeyChunks(shape: OpenKeysShape): SourceChunk[] {
  const chunks: SourceChunk[] = [];
  let offset = 0;
  for (const batch of batches(shape)) {
    chunks.push(packChunk(BigInt(offset), EPOCH, batch));
    offset += batch.length;
  }
  return chunks;
}

/** The same messages in a stream of an embedded broker. */
export function fillSource(broker: MemoryBroker, shape: OpenKeysShape, stream = 'source'): void {
  broker.createStream(stream);
  for (const batch of batches(shape)) broker.append(stream, batch);
}
