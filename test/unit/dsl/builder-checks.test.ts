import { describe, expect, it } from 'vitest';
import { aggregate, ConfigError } from '../../../src/index.js';
import { brokerWithReadings } from '../../support/jobs/memory-job.js';

const broker = brokerWithReadings([]);
const source = broker.source('source');
const target = broker.target('target', { producer: 'p' });
const job = () =>
  aggregate(source)
    .count(1)
    .reduce((a) => a);

describe('the late policy', () => {
  it('should be rejected at .late() when the window has no event-time bounds', () => {
    const counted = aggregate(source).count(3);
    expect(() => counted.late('drop')).toThrow(
      "late policy applies only to windows with event-time bounds, not count(3), given: 'drop'",
    );
  });

  it('should be rejected at the window when .late() came first', () => {
    const late = aggregate(source).late('include');
    expect(() => late.count(3)).toThrow(
      "late policy applies only to windows with event-time bounds, not count(3), given: 'include'",
    );
    expect(() => late.compact(() => 'k', { count: 2 })).toThrow(ConfigError);
  });

  it('should be accepted on windows with event-time bounds in either order', () => {
    expect(() => aggregate(source).late('drop').tumbling('1m')).not.toThrow();
    expect(() => aggregate(source).session('5s').late('drop')).not.toThrow();
    expect(() =>
      aggregate(source)
        .late('side')
        .compact(() => 'k', { gap: '5s' }),
    ).not.toThrow();
  });
});

describe('the retry delays of .to()', () => {
  it.each([
    [
      { retryDelayMs: Infinity },
      'retryDelayMs must be a finite number of milliseconds, given: Infinity',
    ],
    [
      { retryDelayMs: Number.NaN },
      'retryDelayMs must be a finite number of milliseconds, given: NaN',
    ],
    [{ retryDelayMs: -1 }, 'retryDelayMs must be >= 0 ms, given: -1'],
    [
      { retryDelayMs: 3e9 },
      'retryDelayMs must be at most 2147483647 ms (2^31 - 1, the longest timer Node keeps), given: 3000000000',
    ],
    [{ maxRetryDelayMs: 0 }, 'maxRetryDelayMs must be > 0 ms, given: 0'],
    [
      { maxRetryDelayMs: 2 ** 31 },
      'maxRetryDelayMs must be at most 2147483647 ms (2^31 - 1, the longest timer Node keeps), given: 2147483648',
    ],
    [
      { retryDelayMs: 10_000, maxRetryDelayMs: 5_000 },
      'maxRetryDelayMs must be at least retryDelayMs (10000 ms), given: 5000',
    ],
    [
      { warnAfterRetries: 0 },
      'warnAfterRetries must be an integer >= 1, or Infinity to never warn of retries, given: 0',
    ],
    [
      { warnAfterRetries: 2.5 },
      'warnAfterRetries must be an integer >= 1, or Infinity to never warn of retries, given: 2.5',
    ],
  ])('should reject %o naming the rule and the value', (options, message) => {
    expect(() => job().to(target, options)).toThrow(ConfigError);
    expect(() => job().to(target, options)).toThrow(message);
  });

  it('should accept 0 (retry at once) and a maximum at the longest timer Node keeps', () => {
    expect(() => job().to(target, { retryDelayMs: 0, maxRetryDelayMs: 2 ** 31 - 1 })).not.toThrow();
  });
});
