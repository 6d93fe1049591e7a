// A TCP load balancer in front of broker nodes, for tests of the address resolver: each new
// connection goes to the next node in turn (round robin), as a plain L4 balancer would.
import { createServer, connect as tcpConnect, type AddressInfo, type Socket } from 'node:net';

export interface TcpBalancer {
  readonly host: string;
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startBalancer(
  nodes: readonly { readonly hostname: string; readonly port: number }[],
): Promise<TcpBalancer> {
  let connections = 0;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const node = nodes[connections++ % nodes.length] as { hostname: string; port: number };
    const upstream = tcpConnect(node.port, node.hostname);
    open.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: '127.0.0.1',
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of open) socket.destroy();
      }),
  };
}
