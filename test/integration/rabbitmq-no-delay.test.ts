// Every connection turns Nagle's algorithm off before its handshake (src/rabbitmq/gaps/
// handshake.ts): with it on, the Open frame written right after the Tune reply waited for
// the broker's delayed ACK, and each connection took ~50 ms to open; credit frames too.
import { Socket } from 'node:net';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { abandon, socketOf } from '../../src/rabbitmq/gaps/client-socket.js';
import { openConnection } from '../../src/rabbitmq/gaps/handshake.js';

describe('a connection to the broker', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('has Nagle turned off on its socket before any handshake frame came back', async () => {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called with .call on its socket
    const original = Socket.prototype.setNoDelay;
    const calls: { socket: Socket; noDelay: boolean | undefined; bytesRead: number }[] = [];
    vi.spyOn(Socket.prototype, 'setNoDelay').mockImplementation(function (
      this: Socket,
      noDelay?: boolean,
    ) {
      calls.push({ socket: this, noDelay, bytesRead: this.bytesRead });
      return original.call(this, noDelay);
    });

    const connection = await openConnection(parseStreamUrl(inject('rabbitmqUrl')), 10_000);
    try {
      const socket = socketOf(connection);
      expect(calls.filter((call) => call.socket === socket)).toEqual([
        { socket, noDelay: true, bytesRead: 0 },
      ]);
    } finally {
      abandon(connection);
    }
  });
});
