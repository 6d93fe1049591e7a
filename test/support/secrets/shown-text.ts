// Everything a value shows when it is printed, logged or thrown: for the tests that no
// password gets out (docs/reference/errors.md#no-passwords).
import { inspect } from 'node:util';
import { jsonText } from '../../../src/common/json-text.js';

/** The password the tests put into URLs and connection strings, to look for afterwards. */
export const SECRET = 's3cr3t-pw';

/**
 * All the text of `values`: what Node prints of each (an error's stack, which starts with its
 * message, its own fields and its cause chain, to any depth), then its JSON where it has one,
 * as a JSON logger writes it, and each cause's message and stack by name, so a cause that
 * inspect would abbreviate is read in full.
 */
export function shownText(...values: readonly unknown[]): string {
  return values
    .map((value) => [inspect(value, { depth: Infinity }), json(value), ...chain(value)].join('\n'))
    .join('\n');
}

function json(value: unknown): string {
  try {
    return jsonText(value) ?? '';
  } catch {
    return '';
  }
}

function chain(value: unknown, seen = new Set<unknown>()): string[] {
  if (!(value instanceof Error) || seen.has(value)) return [];
  seen.add(value);
  const nested = value instanceof AggregateError ? (value.errors as unknown[]) : [];
  return [
    value.message,
    value.stack ?? '',
    ...[value.cause, ...nested].flatMap((inner) => chain(inner, seen)),
  ];
}
