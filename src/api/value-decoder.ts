import { decode as decodeMsgpack } from '@msgpack/msgpack';
import { ConfigError } from '../common/errors.js';
import { synchronousValidator, type StandardSchemaV1 } from './standard-schema.js';

/**
 * Turns the body of a source message (the payload of its first data section) into the
 * value the job aggregates. Receives the chunk's bytes and the body's bounds rather than
 * a slice, so the built-in decoders read in place without a view object per message.
 */
export type BodyDecoder<T> = (chunk: Buffer, start: number, end: number) => T;

/** How a job decodes source bodies: a built-in format, or a function of the body's bytes. */
export type ValueFormat<T> = 'json' | 'msgpack' | 'string' | 'raw' | ((body: Uint8Array) => T);

/**
 * The decoder of `format`; with a Standard Schema `schema`, each decoded value is checked by
 * it (a failing value throws a SchemaValidationError) and the job reads the schema's output.
 */
export function bodyDecoder<T>(
  format: ValueFormat<T>,
  schema?: StandardSchemaV1,
): BodyDecoder<unknown> {
  const decode = formatDecoder(format);
  if (schema === undefined) return decode;
  const validate = synchronousValidator(schema);
  return (chunk, start, end) => validate(decode(chunk, start, end));
}

function formatDecoder<T>(format: ValueFormat<T>): BodyDecoder<T> {
  switch (format) {
    case 'json':
      // Buffer#toString decodes UTF-8 straight from the range: no intermediate view.
      return (chunk, start, end) => JSON.parse(chunk.toString('utf8', start, end)) as T;
    case 'string':
      return (chunk, start, end) => chunk.toString('utf8', start, end) as T;
    case 'msgpack':
      return (chunk, start, end) => decodeMsgpack(chunk.subarray(start, end)) as T;
    case 'raw':
      // A copy, so that a value kept in an accumulator does not pin the whole chunk.
      return (chunk, start, end) => Uint8Array.prototype.slice.call(chunk, start, end) as T;
    default:
      if (typeof format !== 'function') {
        throw new ConfigError(
          'decode format',
          "must be 'json', 'msgpack', 'string', 'raw' or a function of the body bytes",
          format,
        );
      }
      return (chunk, start, end) => format(chunk.subarray(start, end));
  }
}
