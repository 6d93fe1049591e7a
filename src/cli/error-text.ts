import { ConfigError, describe } from '../common/errors.js';

/**
 * An error as the command line prints it. A ConfigError ends with the value it was given, and
 * the library writes a bigint there as JavaScript does (`given: 4n`, telling it from a number);
 * on the command line it is an offset the user typed as `4`.
 */
export function errorText(error: unknown): string {
  const text = describe(error);
  const bigint = error instanceof ConfigError && typeof error.given === 'bigint';
  return bigint && text.endsWith(`, given: ${String(error.given)}n`) ? text.slice(0, -1) : text;
}
