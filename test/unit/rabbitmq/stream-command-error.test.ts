import { describe, expect, it } from 'vitest';
import { StreamCommandError } from '../../../src/rabbitmq/index.js';

describe('StreamCommandError', () => {
  it('is retriable when the broker says the stream is not available, as for publishes', () => {
    const error = new StreamCommandError('create', 'sensors', 0x06);

    expect(error.retriable).toBe(true);
    expect(error.message).toBe("create of stream 'sensors' failed (code 6): stream not available");
  });

  it('is not retriable when the broker refuses access', () => {
    expect(new StreamCommandError('delete', 'sensors', 0x10).retriable).toBe(false);
  });
});
