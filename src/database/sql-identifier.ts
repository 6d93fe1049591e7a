import { ConfigError } from '../common/errors.js';

/** PostgreSQL truncates longer identifiers (NAMEDATALEN - 1 bytes): two names could meet. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * `name` as a quoted SQL identifier: double quotes around it, a quote inside doubled, so any
 * name is taken literally (case kept, no injection). `'schema.table'` is two identifiers, each
 * quoted; a column name has no schema. Checked where the option is given (`ConfigError`).
 */
export function quoteIdentifier(parameter: string, name: unknown, qualified = false): string {
  if (typeof name !== 'string' || name === '') {
    throw new ConfigError(parameter, 'must be a non-empty string', name);
  }
  const parts = qualified ? name.split('.') : [name];
  if (parts.length > 2) {
    throw new ConfigError(parameter, "must be 'table' or 'schema.table'", name);
  }
  return parts.map((part) => quotePart(parameter, part, name)).join('.');
}

function quotePart(parameter: string, part: string, name: string): string {
  if (part === '' || part.includes('\0')) {
    throw new ConfigError(parameter, 'must not have an empty part or a NUL character', name);
  }
  if (Buffer.byteLength(part, 'utf8') > MAX_IDENTIFIER_BYTES) {
    throw new ConfigError(
      parameter,
      `must have parts of at most ${MAX_IDENTIFIER_BYTES} bytes (PostgreSQL truncates longer names)`,
      name,
    );
  }
  return `"${part.replaceAll('"', '""')}"`;
}
