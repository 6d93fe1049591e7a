import type { ClientParams } from 'rabbitmq-stream-js-client';
import { ResultProperty } from '../../result-format/result-format.js';
import type { SourceChunk } from '../../ports/ports.js';
import { storedProperties } from '../../result-format/stored-result.js';
import type { MemberReach } from '../cluster/node-connection.js';
import { rabbitSource } from '../read/source.js';
import { readRange } from '../read/stream-range.js';

/**
 * Whether `producer` ever stored a result on `stream` (the Target port's `hasPublished`).
 * RabbitMQ answers a last publishing id of 0 both for an unknown producer name and for one
 * whose only write had id 0, and has no query that tells them apart; the results themselves
 * do: each carries its producer in the `sw-producer` application property.
 *
 * Cost: reads the stream from its first offset still stored with the adapter's own source
 * (one connection, `timeoutMs` bounding connect, subscribe and each wait for a chunk; see
 * ../read/stream-range.ts) and decodes each message's
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
  reach: MemberReach = {},
): Promise<boolean> {
  const source = rabbitSource(stream, { ...reach, connection: params, timeoutMs });
  const end = await source.endOffset();
  if (end === 0n) return false;
  let found = false;
  await readRange(source, 'first', end, timeoutMs, (chunk, count) => {
    found = holdsResultOf(chunk, count, producer);
    return found;
  });
  return found;
}

function holdsResultOf(chunk: SourceChunk, count: number, producer: string): boolean {
  for (let i = 0; i < count; i++) {
    if (storedProperties(chunk, i)?.[ResultProperty.producer] === producer) return true;
  }
  return false;
}
