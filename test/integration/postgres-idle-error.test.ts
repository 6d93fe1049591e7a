// A pg pool given to `postgres(pool)` without an 'error' listener: when the server ends its
// idle connections (pg_terminate_backend, as a restart or an administrator would), pg emits
// 'error' on the pool, which with no listener ends the process. The adapter listens: the
// child running the sink lives on, its logger says what happened, and the sink applies what
// comes next, each message once. A listener of the user's own still hears the errors.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { postgresForTests } from '../support/brokers/postgres.js';
import { bound } from '../support/timing.js';

const db = postgresForTests();
const child = fileURLToPath(new URL('./postgres-idle-error-child.ts', import.meta.url));

/** The child, its lines awaited one by one, and its stderr and end kept for the failure message. */
function start(args: readonly string[]) {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, db.url, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const exited = new Promise<string>((resolve) =>
    proc.on('exit', (code, signal) => resolve(`code ${code}, signal ${signal}`)),
  );
  const lines: string[] = [];
  const waiting: (() => void)[] = [];
  createInterface({ input: proc.stdout }).on('line', (line) => {
    lines.push(line);
    for (const wake of waiting.splice(0)) wake();
  });
  /**
   * Waits for a line `matches`; fails with what the child said if it ends first or says
   * nothing of the kind within 60 s.
   */
  const line = async (matches: (line: string) => boolean): Promise<string> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const found = lines.find(matches);
      if (found !== undefined) return found;
      let timer: NodeJS.Timeout | undefined;
      const ended = await Promise.race([
        exited,
        new Promise<undefined>((resolve) => waiting.push(() => resolve(undefined))),
        new Promise<string>(
          (resolve) =>
            (timer = setTimeout(() => resolve('still running, 60 s'), deadline - Date.now())),
        ),
      ]);
      clearTimeout(timer);
      if (ended !== undefined && lines.find(matches) === undefined) {
        throw new Error(
          `the child ended or stalled (${ended}) before the line; its lines: ` +
            `${lines.join(' | ')}; its stderr:\n${stderr}`,
        );
      }
    }
  };
  return { proc, lines, line, exited, send: (text: string) => proc.stdin.write(`${text}\n`) };
}

/** Ends every connection of the child (idle: the sink waits for messages); how many. */
async function terminateIdle(): Promise<number> {
  const rows = await db.query<{ n: number }>(
    "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'idle-error-child' AND state = 'idle' AND datname = current_database()",
  );
  return rows[0]?.n ?? 0;
}

describe('postgres(pool) with a pool whose idle connections the server ends', () => {
  it.each([
    ['without a listener of its own', []],
    ['with a listener of its own, which still hears them', ['own']],
  ])(
    'keeps the process and the sink running, exact (%s)',
    async (_, args) => {
      await db.query('DROP TABLE IF EXISTS applied, stream_windows_checkpoints');
      await db.query('CREATE TABLE applied (n int NOT NULL)'); // no key: a repeat would show
      const sink = start(args);
      sink.send('append 0 100');
      await sink.line((l) => l === 'applied 99');
      // Its client goes back to the pool after the commit's answer: asked until it is idle.
      let terminated = 0;
      for (let tries = 0; terminated === 0; tries++) {
        if (tries === 200)
          throw new Error(`no idle connection of the child: ${sink.lines.join(' | ')}`);
        terminated = await terminateIdle();
      }

      await sink.line((l) => l.startsWith('warn ') && l.includes('idle connection'));
      if (args.includes('own')) await sink.line((l) => l === 'own 57P01');
      sink.send('append 100 200');
      await sink.line((l) => l === 'applied 199');
      sink.send('stop');
      const summary = await sink.line((l) => l.startsWith('summary '));
      expect(await sink.exited).toBe('code 0, signal null');

      console.log(
        `idle-error test (${args.join(' ') || 'no listener'}): ${terminated} connection(s) ended; ` +
          `child said: ${sink.lines.filter((l) => !l.startsWith('applied')).join(' | ')}`,
      );
      expect(JSON.parse(summary.slice('summary '.length))).toMatchObject({ applied: 200 });
      expect(
        await db.query(
          'SELECT count(*)::int AS n, count(DISTINCT n)::int AS d, min(n) AS min, max(n) AS max FROM applied',
        ),
      ).toEqual([{ n: 200, d: 200, min: 0, max: 199 }]);
    },
    bound(120_000),
  );
});
