import { CodecError } from '../../codecs/codec-error.js';
import type { ResultWhere, Target } from '../../ports/ports.js';
import { decodeResultHeader, type ResultHeader } from '../../result-format/result-format.js';

/** The producer's last result as a restart finds it. */
export type LastResult =
  | { readonly kind: 'read'; readonly header: ResultHeader }
  | { readonly kind: 'missing' }
  | { readonly kind: 'unreadable'; readonly reason: string };

/**
 * The producer's result under publishing id `last`: one read (looking first where `where`
 * says) and one decode of its header.
 */
export async function readLastResult(
  target: Target,
  last: bigint,
  where: ResultWhere,
): Promise<LastResult> {
  const bytes = await target.readResult(last, where);
  if (bytes === undefined) return { kind: 'missing' };
  try {
    return { kind: 'read', header: decodeResultHeader(bytes) };
  } catch (cause) {
    if (!(cause instanceof CodecError)) throw cause;
    return { kind: 'unreadable', reason: cause.message };
  }
}
