import { ConfigError } from './errors.js';

/**
 * Where the library writes what an operator wants to read: pino's method shape (an object of
 * fields, then a message), so a pino, bunyan or winston-with-adapter logger is passed as is.
 * Offsets are logged as decimal strings: not every logger serializes a bigint.
 */
export interface Logger {
  /** Detail for tracing a problem (a RabbitMQ source's reconnects and the like). */
  debug(fields: object, message: string): void;
  /** A job's lifecycle: standing by, resuming, stopping. */
  info(fields: object, message: string): void;
  /** Something an operator should look at; the job goes on. */
  warn(fields: object, message: string): void;
  /** A failure: the job, a close or a listener failed. */
  error(fields: object, message: string): void;
}

/**
 * The default: a library says nothing unless asked to. Its methods take no arguments, so it
 * also serves as rabbitmq-stream-js-client's one-argument logger (src/rabbitmq/gaps).
 */
export const silentLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} satisfies Logger;

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** A given logger, checked where it is given; the silent one when none is. */
export function checkLogger(parameter: string, logger: Logger | undefined): Logger {
  if (logger === undefined) return silentLogger;
  const missing = LEVELS.filter(
    (level) => typeof (logger as Partial<Logger> | null)?.[level] !== 'function',
  );
  if (missing.length > 0) {
    throw new ConfigError(
      parameter,
      `must have pino's methods debug, info, warn and error (missing: ${missing.join(', ')})`,
      logger,
    );
  }
  return logger;
}
