import { createHash } from 'node:crypto';
import { MAX_REFERENCE_BYTES } from './stream-protocol.js';

/**
 * A reference of RabbitMQ's server-side offset tracking that belongs to one job: `kind`, then
 * the job's target stream and producer name as a JSON array (so that no two pairs of names
 * give the same reference), e.g. `stream-windows hint ["minutes","stage-1"]`. A reference too
 * long for the broker to keep (over MAX_REFERENCE_BYTES, which it would silently ignore) is
 * named by the SHA-256 of that JSON array instead: `stream-windows hint sha256:<64 hex digits>`.
 */
export function trackingReference(kind: string, target: string, producer: string): string {
  const pair = JSON.stringify([target, producer]);
  const named = `stream-windows ${kind} ${pair}`;
  if (Buffer.byteLength(named, 'utf8') <= MAX_REFERENCE_BYTES) return named;
  return `stream-windows ${kind} sha256:${createHash('sha256').update(pair, 'utf8').digest('hex')}`;
}
