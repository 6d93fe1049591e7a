import { describe, expect, it } from 'vitest';
import { skipCommand } from '../../../src/engine/skip-request.js';

describe('the skip command a stopped job names', () => {
  it('names source, target, producer and offset as plain words when they are', () => {
    expect(skipCommand('orders', 'totals-1h', 'job.v2', 41n)).toBe(
      'stream-windows skip --source orders --target totals-1h --producer job.v2 --offset 41',
    );
  });

  it('quotes a name a shell would split or expand, so the line can be pasted as it is', () => {
    expect(skipCommand('my orders', "it's", '$job', 0n)).toBe(
      `stream-windows skip --source 'my orders' --target 'it'\\''s' --producer '$job' --offset 0`,
    );
  });
});
