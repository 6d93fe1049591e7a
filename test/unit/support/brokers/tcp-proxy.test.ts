import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startProxy, type TcpProxy } from '../../../support/brokers/tcp-proxy.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** A stand-in broker that accepts connections and says nothing. */
async function silentServer(): Promise<{ hostname: string; port: number }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closing.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { hostname: '127.0.0.1', port: (server.address() as AddressInfo).port };
}

async function proxyTo(broker: { hostname: string; port: number }): Promise<TcpProxy> {
  const proxy = await startProxy(broker);
  closing.push(() => proxy.close());
  return proxy;
}

describe('the test TCP proxy', () => {
  // A client's socket in the proxy may end on an error rather than a clean close: a reset, or
  // (seen in CI) a broker's answer piped to a client that had just hung up ("This socket has
  // been ended by the other party"). Either way the client is gone, which is all allClosed asks.
  it('should report every client closed when a client connection ends on an error', async () => {
    const proxy = await proxyTo(await silentServer());
    const client = connect(proxy.port, '127.0.0.1');
    await once(client, 'connect');
    const closed = proxy.allClosed();

    client.resetAndDestroy(); // the proxy's side of it fails with ECONNRESET

    await expect(closed).resolves.toBeUndefined();
  });
});
