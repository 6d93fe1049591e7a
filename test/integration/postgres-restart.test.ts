// The sink's PostgreSQL adapter across a server stop and start, in a child process with a
// pool of the adapter's own: a transaction open when the server stops and one tried while it
// is down are retriable and hold nothing; after the start the next transaction commits, what
// was committed before the stop is still there, and after close() the process exits by itself
// (the pool's idle connection, broken by the stop, does not end the process either).
//
// Needs the local PostgreSQL of scripts/postgres.sh: it runs a second server of its own on
// port 5434 (root needed; without it the test fails saying so), so the one the other test
// files use is never stopped. It checks the script's start (idempotent), stop and status on
// the way.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  OWN_POSTGRES_PORTS,
  ownPostgres,
  POSTGRES_SCRIPT,
  withClient,
} from '../support/brokers/own-postgres.js';
import { bound } from '../support/timing.js';

const child = fileURLToPath(new URL('./postgres-restart-child.ts', import.meta.url));
/** How long the child may take to exit after it closed: far more than it needs (< 1 s). */
const EXIT_BOUND_MS = bound(15_000);

// This test stops and starts a server, so never the one POSTGRES_URL names: a second one.
const server = ownPostgres(OWN_POSTGRES_PORTS.sinkRestart, 'postgres-restart.test.ts');

afterAll(() => server.stop());

describe('a process using postgres() while the server stops and starts again', () => {
  it(
    'gets retriable errors while it is down, commits after, and exits by itself after close()',
    async () => {
      const serverUrl = await server.start();
      const url = await server.createDatabase('sw_restart');

      const proc = spawn(process.execPath, ['--import', 'tsx', child, url], {
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      const exit = once(proc, 'exit');
      const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
      const next = async () => (await lines.next()).value as string | undefined;
      const tell = (line: string) => proc.stdin.write(`${line}\n`);

      expect(await next()).toBe('ready');
      tell('hold');
      expect(await next()).toBe('holding');
      await server.stop();
      await expect(server.status()).rejects.toMatchObject({ code: 1 });
      // Fast shutdown ends the session under the open transaction (57P01).
      expect(JSON.parse((await next()) ?? '')).toMatchObject({ code: '57P01', retriable: true });
      tell('stopped');
      expect(JSON.parse((await next()) ?? '')).toMatchObject({
        code: 'ECONNREFUSED',
        retriable: true,
      });
      expect(await server.start()).toBe(serverUrl);
      // Idempotent: a start of a running server only tells its URL.
      expect(await server.start()).toBe(serverUrl);
      expect(await server.status()).toBe(serverUrl);
      tell('started');
      expect(await next()).toBe('applied');
      expect(await next()).toBe('closed');

      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'still running'>(
        (resolve) => (timer = setTimeout(() => resolve('still running'), EXIT_BOUND_MS)),
      );
      const exited = await Promise.race([exit.then(([code]) => code as number | null), bound]);
      clearTimeout(timer);
      if (exited === 'still running') proc.kill('SIGKILL');
      expect(exited).toBe(0);

      const applied = await withClient(url, (client) =>
        client.query<{ n: number }>('SELECT n FROM applied ORDER BY n'),
      );
      expect(applied.rows.map((row) => row.n)).toEqual([1, 4]);
      await server.dropDatabase(url);
    },
    bound(180_000),
  );
});

describe('scripts/postgres.sh start killed half-way through its first one', () => {
  it(
    'is completed by the next start: the server comes up with its database',
    async () => {
      const killed = ownPostgres(OWN_POSTGRES_PORTS.killedStart, 'postgres-restart.test.ts');
      killed.requireRoot();
      const data = killed.dataFolder;
      await rm(data, { recursive: true, force: true });
      await rm(`${data}.new`, { recursive: true, force: true });
      try {
        // Its own process group, so the kill takes initdb with it.
        const first = spawn(POSTGRES_SCRIPT, ['start'], {
          env: killed.env,
          detached: true,
          stdio: 'ignore',
        });
        const exited = once(first, 'exit');
        // The hook: initdb has written its first file; the database is not made yet.
        while (![data, `${data}.new`].some((folder) => existsSync(join(folder, 'PG_VERSION')))) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        process.kill(-(first.pid ?? 0), 'SIGKILL');
        await exited;

        const rows = await withClient(await killed.start(), (client) =>
          client.query<{ name: string }>('SELECT current_database() AS name'),
        );
        expect(rows.rows).toEqual([{ name: 'stream_windows' }]);
      } finally {
        await killed.stop();
        await rm(data, { recursive: true, force: true });
      }
    },
    bound(300_000),
  );
});
