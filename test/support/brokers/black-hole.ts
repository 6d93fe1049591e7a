// A TCP listener that accepts every connection and never answers: a node as a client sees it
// while its VM is frozen (SIGSTOP keeps its sockets open and says nothing), without freezing a
// node the other tests use.
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';

export interface BlackHole {
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Resolves once every connection accepted so far was closed by its client. */
  allClosed(): Promise<void>;
  close(): Promise<void>;
}

export async function startBlackHole(): Promise<BlackHole> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.resume(); // reads and drops what the client sends: its end comes through
    socket.on('error', () => undefined); // a reset by the client that gives up is its right
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return sockets.length;
    },
    allClosed: async () => {
      await Promise.all(
        sockets.map((socket) =>
          socket.destroyed
            ? Promise.resolve()
            : new Promise<void>((resolve) => socket.once('close', () => resolve())),
        ),
      );
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
