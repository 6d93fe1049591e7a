// A connection whose frame router cannot be set up (a client whose internals moved) is
// abandoned, not left open with its heartbeat timer keeping the process alive.
import { describe, expect, it, vi } from 'vitest';
import { ClientInternalsError } from '../../../../src/common/errors.js';

const seen = vi.hoisted(() => ({ abandoned: [] as unknown[] }));
const connection = vi.hoisted(() => ({ maxFrameSize: 1_048_576 }));

vi.mock('../../../../src/rabbitmq/cluster/node-connection.js', () => ({
  advertisedNode: () => undefined,
  openAnyNode: () => Promise.resolve(connection),
  openNodeConnection: () => Promise.resolve(connection),
}));
vi.mock('../../../../src/rabbitmq/gaps/client-socket.js', () => ({
  abandon: (opened: unknown) => seen.abandoned.push(opened),
  socketOf: () => ({ destroy: () => undefined }),
}));
vi.mock('../../../../src/rabbitmq/gaps/publish-confirms.js', () => ({
  PublishRouter: vi.fn(() => {
    throw new ClientInternalsError('the socket has 2 data listeners, expected 1');
  }),
}));
const { ReconnectingConnection } = await import('../../../../src/rabbitmq/gaps/reconnect.js');

describe('ReconnectingConnection whose frame router cannot be set up', () => {
  it('fails with the router’s error and abandons the connection it opened', async () => {
    const params = { hostname: 'node', port: 5552, username: 'u', password: 'p', vhost: '/' };

    const error = await ReconnectingConnection.open(params).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ClientInternalsError);
    expect(seen.abandoned).toEqual([connection]);
  });
});
