/**
 * Canonical JSON for results any client can read (`pack: 'single', format: 'json'`): equal
 * values give equal bytes, as canonical msgpack does, so a replayed result is byte-identical.
 *
 * - UTF-8, no whitespace; object keys sorted (JavaScript string order, as canonical msgpack);
 * - properties whose value is `undefined` are left out, `undefined` in an array is `null`
 *   (both as JSON.stringify does);
 * - finite numbers as JSON.stringify writes them (-0 as 0); NaN and ±Infinity are refused,
 *   JSON has no way to say them and writing `null` would change the value silently;
 * - bigints as decimal strings (JSON parsers lose integers above 2^53);
 * - Uint8Array (and Buffer) as standard base64 strings with padding;
 * - Date as its ISO 8601 string (an invalid Date is refused);
 * - Map, Set, functions and symbols are refused, like canonical msgpack refuses Map and Set,
 *   and so is an own key '__proto__', as canonical msgpack refuses it;
 *   other objects are written as their own enumerable properties (`toJSON` is not called, so
 *   both formats see the same fields).
 *
 * So values read back as JSON: a bigint, a binary or a Date comes back as a string.
 */
import { CodecError } from './codec-error.js';

const MAX_DEPTH = 100;

export function encodeCanonicalJson(value: unknown): Uint8Array {
  const parts: string[] = [];
  write(value, 1, parts);
  return Buffer.from(parts.join(''), 'utf8');
}

/** Decodes one JSON document filling all of `bytes`; throws CodecError on anything else. */
export function decodeJson(bytes: Uint8Array): unknown {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CodecError(`invalid JSON: ${(error as Error).message}`, 0);
  }
}

function write(value: unknown, depth: number, parts: string[]): void {
  switch (typeof value) {
    case 'string':
      parts.push(JSON.stringify(value));
      return;
    case 'boolean':
      parts.push(value ? 'true' : 'false');
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new CodecError(`cannot encode ${value} as JSON`, 0);
      parts.push(JSON.stringify(value));
      return;
    case 'bigint':
      parts.push(`"${value}"`);
      return;
    case 'undefined':
      parts.push('null'); // only reached inside arrays: object properties skip undefined
      return;
    case 'object':
      break;
    default:
      throw new CodecError(`cannot encode a ${typeof value} as JSON`, 0);
  }
  if (value === null) {
    parts.push('null');
    return;
  }
  if (value instanceof Uint8Array) {
    parts.push(
      `"${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')}"`,
    );
    return;
  }
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new CodecError('cannot encode an invalid Date', 0);
    parts.push(`"${value.toISOString()}"`);
    return;
  }
  if (depth > MAX_DEPTH) throw new CodecError(`cannot encode: nested deeper than ${MAX_DEPTH}`, 0);
  if (value instanceof Map || value instanceof Set) {
    throw new CodecError(`cannot encode a ${value.constructor.name}: use an object or array`, 0);
  }
  if (Array.isArray(value)) {
    parts.push('[');
    value.forEach((item: unknown, i) => {
      if (i > 0) parts.push(',');
      write(item, depth + 1, parts);
    });
    parts.push(']');
    return;
  }
  parts.push('{');
  let first = true;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined) continue;
    // As canonical msgpack does, so a value is accepted or refused whatever the format.
    if (key === '__proto__') throw new CodecError("cannot encode an object key '__proto__'", 0);
    if (!first) parts.push(',');
    first = false;
    parts.push(JSON.stringify(key), ':');
    write(item, depth + 1, parts);
  }
  parts.push('}');
}
