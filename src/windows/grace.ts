import { ConfigError } from '../common/errors.js';
import { parseDuration, type Duration } from './duration.js';

/**
 * Reads the grace of an event-time window. It has no default, as in Kafka Streams
 * (`ofSizeWithNoGrace` / `ofSizeAndGrace`): how long to wait for late data is the user's call,
 * and 0 says "none" explicitly.
 */
export function parseGrace(parameter: string, grace: Duration | undefined): number {
  if (grace === undefined) {
    throw new ConfigError(
      parameter,
      "must be given for an event-time window: how long after a window's end it still takes late elements (0 for none)",
      grace,
    );
  }
  return parseDuration(parameter, grace, 'non-negative');
}
