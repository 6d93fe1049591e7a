// A PostgreSQL server that stops answering mid-statement (a TCP proxy that stops forwarding
// the server's bytes; test/support/brokers/tcp-proxy.ts frames RabbitMQ's protocol, so a plain one here): the sink's transactionTimeoutMs ends the transaction, close() returns
// within its bound, and nothing is left keeping the process alive. Run in a child process,
// which must exit by itself.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresForTests } from '../support/brokers/postgres.js';
import { bound } from '../support/timing.js';

const db = postgresForTests();
const child = fileURLToPath(new URL('./postgres-silent-child.ts', import.meta.url));

/** A proxy to the server whose `freeze()` stops passing the server's bytes on, closing nothing. */
interface SilentProxy {
  readonly port: number;
  freeze(): void;
  close(): Promise<void>;
}

async function startSilentProxy(server: { hostname: string; port: number }): Promise<SilentProxy> {
  const pairs: [Socket, Socket][] = [];
  const listener: Server = createServer((client) => {
    const upstream = connect(server.port, server.hostname);
    pairs.push([client, upstream]);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  return {
    port: (listener.address() as AddressInfo).port,
    freeze: () => {
      for (const [client, upstream] of pairs) upstream.unpipe(client);
    },
    close: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      return new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}

let proxy: SilentProxy | undefined;

afterEach(async () => {
  await proxy?.close();
});

/** Runs the child; returns its lines with the ms since the freeze, and whether it exited by itself within `limitMs`. */
async function runSilent(
  mode: 'close' | 'timeout',
  limitMs: number,
): Promise<{ lines: string[]; exited: boolean; exitMs: number }> {
  const server = new URL(db.url);
  proxy = await startSilentProxy({ hostname: server.hostname, port: Number(server.port) });
  const viaProxy = new URL(db.url);
  viaProxy.port = String(proxy.port);
  const proc = spawn(process.execPath, ['--import', 'tsx', child, mode, viaProxy.toString()], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let frozenAt = 0;
  createInterface({ input: proc.stdout }).on('line', (line) => {
    lines.push(line);
    if (line === 'frozen?') {
      proxy?.freeze();
      frozenAt = performance.now();
      proc.stdin.write('frozen\n');
    }
  });
  const exited = await new Promise<boolean>((resolve) => {
    const limit = setTimeout(() => resolve(false), limitMs);
    proc.on('exit', () => {
      clearTimeout(limit);
      resolve(true);
    });
  });
  const exitMs = performance.now() - frozenAt;
  if (!exited) proc.kill('SIGKILL');
  return { lines, exited, exitMs };
}

describe('postgres(): a server that stops answering mid-statement', () => {
  it(
    'transactionTimeoutMs ends the hung statement: a retriable timeout, and the process exits by itself',
    async () => {
      const { lines, exited, exitMs } = await runSilent('timeout', 30_000);
      expect(lines).toContain('stopped retries');
      expect(exited).toBe(true);
      console.log(`timeout: the child exited ${Math.round(exitMs)} ms after the freeze`);
    },
    bound(60_000),
  );

  it(
    'close() returns within its bound and the process exits by itself',
    async () => {
      const { lines, exited, exitMs } = await runSilent('close', 30_000);
      expect(lines).toContain('closed');
      expect(exited).toBe(true);
      console.log(`close: the child exited ${Math.round(exitMs)} ms after the freeze`);
    },
    bound(60_000),
  );
});
