// How streamStats reports a connection that could not be opened: a passing failure as a
// retriable SourceError naming the stream, a final one as it is.
import { describe, expect, it, vi } from 'vitest';
import {
  AccessRefusedError,
  BrokerUnavailableError,
  isRetriable,
  SourceError,
  StreamWindowsError,
} from '../../../../src/common/errors.js';

const failure = vi.hoisted((): { error: unknown } => ({ error: undefined }));
vi.mock('../../../../src/rabbitmq/gaps/handshake.js', () => ({
  openConnection: () => Promise.reject(failure.error),
}));
const { streamStats } = await import('../../../../src/rabbitmq/read/stream-stats.js');

const params = { hostname: 'nowhere', port: 1, username: 'u', password: 'p', vhost: '/' };

describe('streamStats when the connection cannot be opened', () => {
  it('reports a passing failure as a retriable SourceError naming the stream', async () => {
    failure.error = new BrokerUnavailableError('no answer in time');
    const error = await streamStats(params, 'sensors', 100).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SourceError);
    expect(isRetriable(error)).toBe(true);
    expect(String(error)).toContain("reading stream 'sensors' failed: no answer in time");
  });

  it.each([
    ['a refused connection', new AccessRefusedError('127.0.0.1:5552', 8, 'user')],
    ['client internals that moved', new StreamWindowsError('internals changed')],
  ])('passes on %s as it is, not retriable', async (_what, final) => {
    failure.error = final;
    await expect(streamStats(params, 'sensors', 100)).rejects.toBe(final);
    expect(isRetriable(final)).toBe(false);
  });
});
