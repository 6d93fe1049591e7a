import { setTimeout as sleep } from 'node:timers/promises';
import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { Source, SourceChunk } from '../core/ports.js';
import { checkLogger, type Logger } from '../common/logger.js';
import { timerMs } from '../common/timer-duration.js';
import {
  ConfigError,
  SourceError,
  StreamWindowsError,
  describe,
  isRetriable,
} from '../common/errors.js';
import { backoffDelay, backoffDelays } from './backoff-delays.js';
import { endOffset } from './source-end-offset.js';
import { Subscription, type SingleActiveOptions } from './source-subscription.js';

/** How a source re-subscribes after a lost connection (targets reconnect with ConnectOptions). */
export interface SourceReconnectOptions {
  /** Consecutive failed attempts before `read` gives up with a retriable SourceError. */
  readonly attempts?: number;
  /** Delay before the first retry; doubles per failed attempt up to `maxDelayMs`. */
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
}

export interface RabbitSourceOptions {
  /** Where the broker is (rabbitmq-stream-js-client's connection settings). */
  readonly connection: ClientParams;
  /** Chunks the broker may send ahead of the reader (the memory bound), default 8. */
  readonly credit?: number;
  readonly reconnect?: SourceReconnectOptions;
  /** Read as a single active consumer of this group (one instance reads, others stand by). */
  readonly singleActive?: SingleActiveOptions;
  /** Bound on connecting, subscribing and closing, default 10 s. */
  readonly timeoutMs?: number;
  /**
   * Hears of each retry (warn, with its delay and cause) and of reading again after retries
   * (info). Pino's method shape; default silent, or `connect()`'s logger for `rabbit.source()`.
   */
  readonly logger?: Logger;
}

/**
 * The `Source` port over a RabbitMQ stream. Every `read` has its own connection and
 * subscription, so several readers never share a socket; chunks are handed over as slices
 * of the Deliver frames (./deliver-chunk.ts), never decoded here.
 *
 * A lost connection is retried with exponential backoff and the subscription resumes at
 * the next undelivered offset, so the reader sees each offset once and in order. After
 * `reconnect.attempts` consecutive failures, or on an error that retrying cannot fix
 * (stream deleted, access refused, malformed chunk), `read` throws: the engine restarts
 * from its resume point.
 */
export function rabbitSource(stream: string, options: RabbitSourceOptions): Source {
  const credit = options.credit ?? 8;
  if (!Number.isInteger(credit) || credit < 1 || credit > 0xffff) {
    throw new ConfigError('credit', 'must be an integer from 1 to 65535', options.credit);
  }
  const attempts = options.reconnect?.attempts ?? 10;
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new ConfigError('reconnect.attempts', 'must be an integer >= 1', attempts);
  }
  const delays = backoffDelays('reconnect.', options.reconnect ?? {});
  const timeoutMs = timerMs('timeoutMs', options.timeoutMs ?? 10_000);
  const logger = checkLogger('logger', options.logger);
  const broker = `${options.connection.hostname}:${options.connection.port}`;
  const groupName = options.singleActive?.name;
  if (options.singleActive !== undefined && (typeof groupName !== 'string' || groupName === '')) {
    throw new ConfigError('singleActive.name', 'must be a non-empty string', groupName);
  }

  async function* read(from: bigint | 'first', signal: AbortSignal): AsyncGenerator<SourceChunk> {
    let next = from;
    let failures = 0;
    while (!signal.aborted) {
      let subscription: Subscription;
      try {
        subscription = await Subscription.open(options.connection, {
          stream,
          from: next,
          credit,
          connectTimeoutMs: timeoutMs,
          ...(options.singleActive === undefined ? {} : { singleActive: options.singleActive }),
        });
      } catch (error) {
        if (!retriable(error)) throw error;
        if (++failures >= attempts) throw gaveUp(error, next);
        await backoff(error, failures, next, signal);
        continue;
      }
      if (signal.aborted) {
        // Aborted while connecting: the listener below would never fire.
        await subscription.close();
        return;
      }
      const stop = (): void => void subscription.close();
      signal.addEventListener('abort', stop, { once: true });
      try {
        for (;;) {
          const chunk = await subscription.take();
          if (chunk === undefined) return;
          // Only a delivery proves the broker is back: a broker that accepts and then drops
          // every subscription must still run out of attempts.
          if (failures > 0) {
            logger.info(
              { broker, stream, retries: failures, offset: String(next) },
              `reading '${stream}' again`,
            );
          }
          failures = 0;
          next = chunk.firstOffset + BigInt(chunk.count);
          yield chunk;
        }
      } catch (error) {
        if (!retriable(error)) throw error;
        if (++failures >= attempts) throw gaveUp(error, next);
        await backoff(error, failures, next, signal);
      } finally {
        signal.removeEventListener('abort', stop);
        await subscription.close();
      }
    }
  }

  /**
   * Out of attempts: still retriable for the engine, which resumes from its own resume point
   * after its own backoff, so an outage longer than ours does not end the job.
   */
  function gaveUp(error: unknown, next: bigint | 'first'): SourceError {
    return new SourceError(
      stream,
      true,
      `no connection after ${attempts} attempts: ${describe(error)}`,
      next === 'first' ? undefined : next,
    );
  }

  function backoff(
    error: unknown,
    failures: number,
    next: bigint | 'first',
    signal: AbortSignal,
  ): Promise<void> {
    const delayMs = backoffDelay(delays, failures);
    logger.warn(
      { broker, stream, retry: failures, delayMs, offset: String(next), cause: describe(error) },
      `reading '${stream}' again in ${delayMs} ms`,
    );
    return sleep(delayMs, undefined, { signal }).catch(() => undefined);
  }

  return {
    stream,
    read,
    endOffset: () => endOffset(options.connection, stream, timeoutMs),
  };
}

/**
 * Connection failures and lost subscriptions are worth retrying; refusals (of the
 * subscription, or of the connection: AccessRefusedError) and bad data are not.
 */
function retriable(error: unknown): boolean {
  // Ours say whether; anything else is the client's or the socket's, about the connection.
  return !(error instanceof StreamWindowsError) || isRetriable(error);
}
