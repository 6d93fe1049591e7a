// A TCP proxy in front of the broker, for tests that cut, refuse, freeze or hold connections.
import { once } from 'node:events';
import { createServer, connect as tcpConnect, type AddressInfo, type Socket } from 'node:net';
import { FrameAssembler } from '../../../src/rabbitmq/socket-frames.js';

export interface TcpProxy {
  readonly port: number;
  /** Closes every connection through the proxy, as a network failure would. */
  cut(): void;
  /** New connections are closed at once (until `accept`). */
  refuse(): void;
  accept(): void;
  /** Stops forwarding from the broker on every connection, without closing: a hung peer. */
  freeze(): void;
  /**
   * New connections are accepted but nothing they send reaches the broker until `release`:
   * a broker that does not answer yet.
   */
  hold(): void;
  release(): void;
  /**
   * Resolves when a client sends a frame with this key, which is held back (with everything
   * after it on that connection) until the returned function is called.
   */
  holdFrame(key: number): Promise<() => void>;
  /** The keys of the frames the broker sent to clients so far, in order (all connections). */
  readonly fromBroker: readonly number[];
  /** Resolves once the broker has sent `count` frames with this key to clients. */
  brokerSent(key: number, count: number): Promise<void>;
  /** Client connections accepted so far. */
  readonly connections: number;
  /** Resolves once every client connection made so far is closed. */
  allClosed(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A proxy to `broker` listening on `port` (default: any free one). Started late on a port a
 * client already tries, it is a broker coming up.
 */
export async function startProxy(
  broker: { hostname: string; port: number },
  port = 0,
): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const clients: Socket[] = [];
  const releases = new Set<() => void>();
  let refusing = false;
  let holding = false;
  let frameHold: { key: number; found: (release: () => void) => void } | undefined;
  const fromBroker: number[] = [];
  const brokerWaits = new Set<{ key: number; count: number; done: () => void }>();
  const sentByBroker = (key: number): number => fromBroker.filter((k) => k === key).length;

  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    clients.push(client);
    const upstream = tcpConnect(broker.port, broker.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    upstream.pipe(client);
    const brokerFrames = new FrameAssembler((frame) => {
      fromBroker.push(frame.readUInt16BE(4));
      for (const wait of brokerWaits) {
        if (sentByBroker(wait.key) >= wait.count) {
          brokerWaits.delete(wait);
          wait.done();
        }
      }
    });
    upstream.on('data', (data: Buffer) => brokerFrames.push(data));
    // Client to broker frame by frame, so that one frame can be held back.
    const queue: Buffer[] = [];
    let held = holding;
    const flush = (): void => {
      held = false;
      for (const data of queue.splice(0)) upstream.write(data);
    };
    if (held) releases.add(flush);
    const frames = new FrameAssembler((frame) => {
      const hold = frameHold;
      if (!held && hold !== undefined && frame.readUInt16BE(4) === hold.key) {
        frameHold = undefined;
        held = true;
        queue.push(Buffer.from(frame));
        hold.found(flush);
        return;
      }
      if (held) queue.push(Buffer.from(frame));
      else upstream.write(frame);
    });
    client.on('data', (data: Buffer) => frames.push(data));
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    cut: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
    },
    refuse: () => (refusing = true),
    accept: () => (refusing = false),
    freeze: () => {
      for (const [, upstream] of pairs) upstream.unpipe();
    },
    hold: () => (holding = true),
    release: () => {
      holding = false;
      for (const release of releases) release();
      releases.clear();
    },
    holdFrame: (key) => new Promise((found) => (frameHold = { key, found })),
    fromBroker,
    get connections() {
      return clients.length;
    },
    brokerSent: (key, count) =>
      sentByBroker(key) >= count
        ? Promise.resolve()
        : new Promise((done) => brokerWaits.add({ key, count, done })),
    allClosed: async () => {
      // On 'close' alone: `once` would reject on an 'error' first (a reset, or a broker's
      // answer piped to a client that just hung up), and the client is gone either way.
      await Promise.all(
        clients.map((client) =>
          client.destroyed
            ? Promise.resolve()
            : new Promise<void>((resolve) => client.once('close', () => resolve())),
        ),
      );
    },
    close: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port nothing listens on now (the system's next free one, released again). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
