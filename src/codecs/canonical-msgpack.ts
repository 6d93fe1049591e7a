/**
 * Canonical msgpack for aggregate values: equal values give equal bytes, which replay
 * stability needs (a re-computed result must be byte-identical to the one published before
 * a crash).
 *
 * - map keys are sorted (JavaScript string order, i.e. by UTF-16 code units);
 * - properties whose value is `undefined` are left out, as JSON does;
 * - numbers keep their type across a round trip: integers up to 32 bits use msgpack ints,
 *   other numbers float64 (-0 is written as the integer 0, as it equals 0); bigints use
 *   int64/uint64 and decode as bigints;
 * - Date uses the msgpack timestamp extension and decodes as Date;
 * - Map and Set are rejected (the library would silently write them as empty maps): convert
 *   them to objects or arrays first;
 * - an own key '__proto__' is rejected: the decoder refuses it.
 */
import { Decoder, Encoder } from '@msgpack/msgpack';
import { describe } from '../common/errors.js';
import { CodecError } from './codec-error.js';
import { checkMsgpackFrame } from './msgpack-frame.js';

/**
 * One encoder for the process: it keeps its grown buffer, so encoding a result costs no
 * buffer allocation beyond the returned copy. It is not reentrant (the library clones itself
 * if `encode` is re-entered, e.g. from a getter), which is fine for synchronous use.
 */
const encoder = new Encoder({ sortKeys: true, useBigInt64: true, ignoreUndefined: true });
const decoder = new Decoder({ useBigInt64: true });

/** The library's own nesting limit; checked first so the error is a CodecError. */
const MAX_DEPTH = 100;
const UINT64_MAX = (1n << 64n) - 1n;
const INT64_MIN = -(1n << 63n);

export function encodeCanonical(value: unknown): Uint8Array {
  return encodeCanonicalAt(value, 1);
}

/**
 * `encodeCanonical` of a value nested at `depth` (1 for a whole value) of a larger one that
 * canonical-msgpack-writer.ts writes piece by piece: the nesting limit counts from the top.
 */
export function encodeCanonicalAt(value: unknown, depth: number): Uint8Array {
  checkEncodable(value, depth);
  try {
    return encoder.encode(value);
  } catch (error) {
    throw new CodecError(`cannot encode as msgpack: ${describe(error)}`, 0);
  }
}

/** Decodes one msgpack value filling all of `bytes`; throws CodecError on anything else. */
export function decodeCanonical(bytes: Uint8Array): unknown {
  checkMsgpackFrame(bytes, 0, bytes.length);
  try {
    return decoder.decode(bytes);
  } catch (error) {
    const at = /buffer\[(\d+)\]/.exec(describe(error))?.[1];
    throw new CodecError(`invalid msgpack: ${describe(error)}`, at === undefined ? 0 : Number(at));
  }
}

function checkEncodable(value: unknown, depth: number): void {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) {
    // The encoder's own limit, which counts every value: checked here too, so that a value
    // encoded apart from its container (encodeCanonicalAt) is refused as it would be in it.
    if (depth > MAX_DEPTH) {
      throw new CodecError(`cannot encode as msgpack: Too deep objects in depth ${depth}`, 0);
    }
    if (typeof value === 'bigint' && (value < INT64_MIN || value > UINT64_MAX)) {
      throw new CodecError(`cannot encode ${value}n: msgpack integers are 64-bit`, 0);
    }
    return;
  }
  if (depth > MAX_DEPTH) throw new CodecError(`cannot encode: nested deeper than ${MAX_DEPTH}`, 0);
  if (value instanceof Map || value instanceof Set) {
    throw new CodecError(`cannot encode a ${value.constructor.name}: use an object or array`, 0);
  }
  if (Array.isArray(value)) {
    for (const item of value) checkEncodable(item, depth + 1);
    return;
  }
  for (const key of Object.keys(value)) {
    // The decoder refuses this key (prototype pollution), so it must never be written: a
    // result nobody can read back would be as good as lost.
    if (key === '__proto__') throw new CodecError("cannot encode an object key '__proto__'", 0);
    checkEncodable((value as Record<string, unknown>)[key], depth + 1);
  }
}
