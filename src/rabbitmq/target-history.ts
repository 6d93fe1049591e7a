import type { ClientParams } from 'rabbitmq-stream-js-client';
import { decodeMessage } from '../codecs/amqp-message.js';
import { CodecError } from '../codecs/codec-error.js';
import { ResultProperty } from '../core/result-format.js';
import type { SourceChunk } from '../core/ports.js';
import type { AddressResolver } from './node-connection.js';
import { rabbitSource } from './source.js';

/**
 * Whether `producer` ever stored a result on `stream` (the Target port's `hasPublished`).
 * RabbitMQ answers a last publishing id of 0 both for an unknown producer name and for one
 * whose only write had id 0, and has no query that tells them apart; the results themselves
 * do: each carries its producer in the `sw-producer` application property.
 *
 * Cost: reads the stream from its first offset still stored with the adapter's own source
 * (one connection, `timeoutMs` bounding connect and subscribe) and decodes each message's
 * header and properties until a result of `producer` turns up, so a producer that never
 * published here costs a read of the whole stream (measured on RabbitMQ 4.0.5 here: 50,000
 * one-message results in about 2.5 s). The runner asks only when the last
 * publishing id is 0, and then only when retention removed the head of its source or when
 * its first result is for offset 0 (see the Target port). Results removed by the
 * target's own retention cannot be seen: a producer whose every result is gone reads as one
 * that never published (its last publishing id would not be 0 either, unless it was 0).
 */
export async function producerHasPublished(
  params: ClientParams,
  stream: string,
  producer: string,
  timeoutMs: number,
  addressResolver?: AddressResolver,
): Promise<boolean> {
  const source = rabbitSource(stream, { connection: params, timeoutMs, addressResolver });
  const end = await source.endOffset();
  if (end === 0n) return false;
  const reading = new AbortController();
  try {
    for await (const chunk of source.read('first', reading.signal)) {
      if (holdsResultOf(chunk, producer)) return true;
      if (chunk.firstOffset + BigInt(chunk.count) >= end) return false;
    }
    return false;
  } finally {
    reading.abort();
  }
}

function holdsResultOf(chunk: SourceChunk, producer: string): boolean {
  for (let i = 0; i < chunk.count; i++) {
    let properties: Record<string, unknown> | undefined;
    try {
      properties = decodeMessage(chunk.bytes, chunk.starts[i], chunk.ends[i]).applicationProperties;
    } catch (error) {
      if (error instanceof CodecError) continue; // another writer's message, not a result
      throw error;
    }
    if (properties?.[ResultProperty.producer] === producer) return true;
  }
  return false;
}
