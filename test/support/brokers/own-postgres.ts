// A PostgreSQL server of a test's own, for tests that stop and start it: scripts/postgres.sh on
// a port of the test's choosing, never the server POSTGRES_URL names (the other test files use
// that one at the same time).
import { execFile } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { bound } from '../timing.js';
import { databaseUrl } from './postgres.js';

/** The port of each test file's own server: files running at once must not share one. */
export const OWN_POSTGRES_PORTS = {
  /** test/integration/postgres-restart.test.ts: the sink's adapter across a restart. */
  sinkRestart: 5434,
  /** test/integration/postgres-restart.test.ts: a first start killed half-way. */
  killedStart: 5435,
  /** test/integration/outbox-relay-postgres-restart.test.ts. */
  relayRestart: 5436,
} as const;

/** scripts/postgres.sh. */
export const POSTGRES_SCRIPT = fileURLToPath(
  new URL('../../../scripts/postgres.sh', import.meta.url),
);

/**
 * How a stop ends the server: 'fast' ends the sessions and shuts down cleanly, 'immediate'
 * quits every process at once, as a crash does (the next start recovers from the WAL).
 */
export type StopMode = 'fast' | 'immediate';

/** A server of scripts/postgres.sh on one port, run by one test file. */
export interface OwnPostgres {
  readonly port: number;
  /** The script's environment for this port, for a test that runs the script itself. */
  readonly env: NodeJS.ProcessEnv;
  /** The server's data folder, on the host (kept across a stop and a start). */
  readonly dataFolder: string;
  /** Fails saying why when the tests do not run as root, which the script needs (a chroot). */
  requireRoot(): void;
  /** Starts it (a start of a running server only tells its URL); resolves with its URL. */
  start(): Promise<string>;
  /** Stops it; resolves once none of its processes is left. */
  stop(mode?: StopMode): Promise<void>;
  /** Resolves with its URL when it accepts connections; rejects (exit code 1) when not. */
  status(): Promise<string>;
  /** Creates a database named `prefix_<pid>_<time>` on the running server; resolves with its URL. */
  createDatabase(prefix: string): Promise<string>;
  /** Drops the database of `url`, ending its sessions. */
  dropDatabase(url: string): Promise<void>;
}

/** The server of scripts/postgres.sh on `port`, for the test file `testFile` (named in errors). */
export function ownPostgres(port: number, testFile: string): OwnPostgres {
  const env = { ...process.env, POSTGRES_PORT: String(port) };
  const root = join(
    process.env.STREAM_WINDOWS_CACHE ?? join(homedir(), '.cache', 'stream-windows'),
    'postgres-trixie',
  );
  let serverUrl: string | undefined;
  const server: OwnPostgres = {
    port,
    env,
    dataFolder: join(root, 'var/lib/postgresql/stream-windows', String(port)),
    requireRoot() {
      // Said first, not as whatever the script fails with halfway.
      if (process.getuid?.() !== 0) {
        throw new Error(
          `${testFile} runs a PostgreSQL server of its own on port ${port} ` +
            '(scripts/postgres.sh, a chroot): run the tests as root',
        );
      }
    },
    async start() {
      serverUrl = await script('start');
      return serverUrl;
    },
    async stop(mode = 'fast') {
      await script('stop', mode);
    },
    status: () => script('status'),
    async createDatabase(prefix) {
      const name = `${prefix}_${process.pid}_${Date.now()}`;
      const url = serverUrl ?? (await server.start());
      await withClient(url, (admin) => admin.query(`CREATE DATABASE ${name}`));
      return databaseUrl(url, name);
    },
    async dropDatabase(url) {
      const name = new URL(url).pathname.slice(1);
      await withClient(serverUrl ?? (await server.start()), (admin) =>
        admin.query(`DROP DATABASE ${name} WITH (FORCE)`),
      );
    },
  };

  async function script(...args: string[]): Promise<string> {
    server.requireRoot();
    const { stdout } = await promisify(execFile)(POSTGRES_SCRIPT, args, {
      env,
      timeout: bound(300_000),
    });
    return stdout.trim();
  }

  return server;
}

/** Runs `work` on a client of its own connected to `url`, ended after. */
export async function withClient<T>(
  url: string,
  work: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
