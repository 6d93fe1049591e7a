// The RabbitMQ adapter's settings are checked where they are given: every duration is a
// timer delay (finite, > 0, at most 2^31 - 1 ms), counts are integers in range, and the
// error names the setting, the rule and the value. Nothing connects with a bad setting.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import type { Logger } from '../../../src/common/logger.js';
import { connect, rabbitSource } from '../../../src/rabbitmq/index.js';

/** Nothing listens on port 1: a setting that passed the checks would fail to connect instead. */
const nowhere = {
  hostname: '127.0.0.1',
  port: 1,
  username: 'guest',
  password: 'guest',
  vhost: '/',
};

describe('a rabbitSource as a value', () => {
  const secret = { ...nowhere, password: 'not-to-be-printed' };

  it('keeps its methods, bound, when spread into a wrapper or taken out', async () => {
    const source = rabbitSource('s', { connection: secret });
    // eslint-disable-next-line @typescript-eslint/no-misused-spread -- what a user's wrapper does
    const wrapper = { ...source, endOffset: () => Promise.resolve(7n) };
    for (const method of ['read', 'storedOffset', 'storeOffset', 'close'] as const) {
      expect(typeof wrapper[method]).toBe('function');
    }
    const { close } = source; // no standby: resolves without touching the broker
    await expect(close()).resolves.toBeUndefined();
  });

  it('shows no password when logged or serialised', () => {
    const source = rabbitSource('s', { connection: secret });
    expect(inspect(source, { depth: 5 })).not.toContain('not-to-be-printed');
    // eslint-disable-next-line @typescript-eslint/no-misused-spread -- what a user's wrapper does
    expect(JSON.stringify({ ...source })).not.toContain('not-to-be-printed');
  });
});

describe('rabbitSource settings', () => {
  it.each([
    [{ timeoutMs: 0 }, 'timeoutMs must be > 0 ms, given: 0'],
    [
      { timeoutMs: Infinity } as const,
      'timeoutMs must be a finite number of milliseconds, given: Infinity',
    ],
    [{ timeoutMs: 3e9 }, 'timeoutMs must be at most 2147483647 ms'],
    [{ reconnect: { initialDelayMs: -1 } }, 'reconnect.initialDelayMs must be > 0 ms, given: -1'],
    [{ reconnect: { initialDelayMs: NaN } }, 'reconnect.initialDelayMs must be a finite number'],
    [{ reconnect: { maxDelayMs: 3e9 } }, 'reconnect.maxDelayMs must be at most 2147483647 ms'],
    [
      { reconnect: { initialDelayMs: 500, maxDelayMs: 100 } },
      'reconnect.maxDelayMs must be >= initialDelayMs (500 ms), given: 100',
    ],
    [{ reconnect: { attempts: 0 } }, 'reconnect.attempts must be an integer >= 1, given: 0'],
    [{ reconnect: { attempts: 1.5 } }, 'reconnect.attempts must be an integer >= 1, given: 1.5'],
    [{ credit: 0 }, 'credit must be an integer from 1 to 65535, given: 0'],
    [{ stallTimeoutMs: 500 }, 'stallTimeoutMs must be at least 1000 ms, given: 500'],
    [{ stallTimeoutMs: 0 }, 'stallTimeoutMs must be > 0 ms, given: 0'],
    [{ singleActive: { name: '' } }, "singleActive.name must be a non-empty string, given: ''"],
    [
      { logger: { warn: () => undefined } as unknown as Logger },
      "logger must have pino's methods debug, info, warn and error (missing: debug, info, error)",
    ],
    [
      { singleActive: { name: 'g', superStream: '' } },
      "singleActive.superStream must be a non-empty string, given: ''",
    ],
  ])('refuses %s', (options, message) => {
    const make = () => rabbitSource('s', { connection: nowhere, ...options });
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(message);
  });

  it("refuses a stream or super stream name RabbitMQ would not serve on the connection's vhost", () => {
    const source = (stream: string, vhost: string, superStream?: string) =>
      rabbitSource(stream, {
        connection: { ...nowhere, vhost },
        ...(superStream === undefined ? {} : { singleActive: { name: 'g', superStream } }),
      });
    expect(() => source('x'.repeat(233), '/')).not.toThrow();
    expect(() => source('x'.repeat(234), '/')).toThrow(
      /^stream must be at most 233 UTF-8 bytes \(on vhost '\/'.*not 234/,
    );
    expect(() => source('x'.repeat(225), 'production')).toThrow(
      /^stream must be at most 224 UTF-8 bytes \(on vhost 'production'.*not 225/,
    );
    expect(() => source('s', '/', 'é'.repeat(128))).toThrow(
      /^singleActive\.superStream must be at most 233 UTF-8 bytes .*not 256/,
    );
    expect(() => source('amq.s', '/')).toThrow(ConfigError);
  });

  it('accepts the largest timer delay Node keeps', () => {
    expect(() =>
      rabbitSource('s', {
        connection: nowhere,
        timeoutMs: 2 ** 31 - 1,
        reconnect: { initialDelayMs: 1, maxDelayMs: 2 ** 31 - 1, attempts: 1 },
      }),
    ).not.toThrow();
  });
});

describe('connect settings', () => {
  it.each([
    [{ connectTimeoutMs: Infinity }, 'connectTimeoutMs must be a finite number of milliseconds'],
    [{ connectTimeoutMs: 0 }, 'connectTimeoutMs must be > 0 ms, given: 0'],
    [{ initialDelayMs: 0 }, 'initialDelayMs must be > 0 ms, given: 0'],
    [{ maxDelayMs: 3e9 }, 'maxDelayMs must be at most 2147483647 ms'],
    [{ initialDelayMs: 200, maxDelayMs: 50 }, 'maxDelayMs must be >= initialDelayMs (200 ms)'],
    [{ requestTimeoutMs: -5 }, 'requestTimeoutMs must be > 0 ms, given: -5'],
    [{ stallTimeoutMs: 999 }, 'stallTimeoutMs must be at least 1000 ms, given: 999'],
    [{ waitForBrokerMs: -1 }, 'waitForBrokerMs must be >= 0 ms, given: -1'],
    [{ waitForBrokerMs: NaN }, 'waitForBrokerMs must be a finite number of milliseconds'],
    [{ waitForBrokerMs: 3e9 }, 'waitForBrokerMs must be at most 2147483647 ms'],
    [
      { logger: { info: () => undefined } as unknown as Logger },
      "logger must have pino's methods debug, info, warn and error (missing: debug, warn, error)",
    ],
    [
      { signal: { aborted: false } as unknown as AbortSignal },
      'signal must be an AbortSignal, given: {"aborted":false}',
    ],
  ])('rejects %s before connecting', async (options, message) => {
    const connecting = connect(nowhere, options);
    await expect(connecting).rejects.toThrow(ConfigError);
    await expect(connecting).rejects.toThrow(message);
  });
});
