// The one exponential backoff the RabbitMQ adapter's connection and sources share.
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../../src/rabbitmq/backoff-delays.js';

describe('backoffDelay', () => {
  it('doubles the first delay per failure up to the cap, and stays there', () => {
    const delays = { initialDelayMs: 100, maxDelayMs: 1_000 };

    expect([1, 2, 3, 4, 5, 6].map((retry) => backoffDelay(delays, retry))).toEqual([
      100, 200, 400, 800, 1_000, 1_000,
    ]);
    expect(backoffDelay(delays, 5_000)).toBe(1_000); // 2^4999 overflows to Infinity: the cap
  });
});
