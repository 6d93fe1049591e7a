import { ConfigError } from '../common/errors.js';

/**
 * `text` as a SQL string literal, for a statement sent without parameters (which may share a
 * round trip with others: `postgres()` sends a transaction's BEGIN with it). Quotes are
 * doubled; a text with a backslash goes as an E'' literal with its backslashes doubled, so it
 * reads the same whatever `standard_conforming_strings` says (as pg's escapeLiteral writes it).
 * A NUL, which no PostgreSQL text holds, is a `ConfigError` naming `parameter` (the setting
 * the text came from).
 */
export function quoteLiteral(parameter: string, text: string): string {
  if (text.includes('\0')) {
    throw new ConfigError(
      parameter,
      'must not hold a NUL character (no PostgreSQL text can)',
      text,
    );
  }
  const quoted = `'${text.replaceAll("'", "''")}'`;
  return text.includes('\\') ? `E${quoted.replaceAll('\\', '\\\\')}` : quoted;
}
