// No password gets out against the real RabbitMQ and PostgreSQL: a refused password, an
// unreachable database, a database sink stopping on either, and the command line on them.
// Each looks at all an error shows (message, stack, fields, cause chain), the log lines, the
// events and the command's output.
import { afterEach, describe, expect, inject, it } from 'vitest';
import type pg from 'pg';
import {
  AccessRefusedError,
  ConfigError,
  databaseSink,
  eachBatch,
  jsonMessage,
  SinkError,
} from '../../src/index.js';
import { connect } from '../../src/rabbitmq/index.js';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { freePort } from '../support/brokers/tcp-proxy.js';
import { runRecorded } from '../support/clients/cli-run.js';
import { keepingLogger } from '../support/doubles/keeping-logger.js';
import { SECRET, shownText } from '../support/secrets/shown-text.js';

const real = rabbitForTests();
const db = postgresForTests();

/** `url` with the password SECRET, and SECRET in a parameter too, as libpq takes one. */
function withSecret(url: string, port?: number): string {
  const changed = new URL(url);
  changed.password = SECRET;
  if (port !== undefined) changed.port = String(port);
  return changed.toString();
}

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

describe('RabbitMQ and passwords', () => {
  it('should refuse a wrong password naming the user, not the password', async () => {
    const logger = keepingLogger();
    const error = await connect(withSecret(inject('rabbitmqUrl')), { logger }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AccessRefusedError);
    expect((error as Error).message).toMatch(/user 'guest'/);
    expect(shownText(error, logger.lines)).not.toContain(SECRET);
  });

  it('should exit 1 on a wrong password from the command line without printing it', async () => {
    const url = withSecret(inject('rabbitmqUrl'));
    const job = ['--source', 's', '--target', 't', '--producer', 'p'];
    const byOption = await runRecorded(['status', ...job, '--url', url]);
    const byEnv = await runRecorded(['tail', '--target', 't'], { RABBITMQ_STREAM_URL: url });
    for (const run of [byOption, byEnv]) {
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^stream-windows: RabbitMQ at 127\.0\.0\.1:5552 refused/);
      expect(run.stdout + run.stderr).not.toContain(SECRET);
    }
  });
});

describe('PostgreSQL and passwords', () => {
  it('should refuse a URL string given to postgres() without showing its password', () => {
    const error = (() => {
      try {
        return postgres(withSecret(db.url) as unknown as pg.PoolConfig);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).given).toMatch(/^postgres:\/\/stream_windows:\*\*\*@/);
    expect(shownText(error)).not.toContain(SECRET);
  });

  it.each([
    ['a wrong password', () => withSecret(db.url)],
    ['an unreachable server', async () => withSecret(db.url, await freePort())],
    ['a password in a parameter too', () => `${withSecret(db.url)}?password=${SECRET}`],
  ])('should fail a transaction on %s without showing the password', async (_, url) => {
    const database = postgres({ connectionString: await url(), connectionTimeoutMillis: 10_000 });
    closing.push(() => database.close());
    const error = await database.transaction((tx) => tx.query('SELECT 1')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(shownText(error)).not.toContain(SECRET);
  });

  it.each([
    ['a wrong password', () => withSecret(db.url)],
    ['an unreachable server', async () => withSecret(db.url, await freePort())],
  ])(
    'should stop a database sink on %s, its error, events and log lines without the password',
    async (_, url) => {
      const stream = await real.newStream('no-passwords');
      await publishAll(real.rabbit, stream, [jsonMessage({ n: 1 })]);
      const logger = keepingLogger();
      const sink = databaseSink({
        name: 'no-passwords',
        source: real.rabbit.source(stream),
        database: postgres({ connectionString: await url(), connectionTimeoutMillis: 10_000 }),
        into: eachBatch({ apply: () => Promise.resolve() }),
        retryDelayMs: 10,
        maxRetries: 2,
        logger,
      });
      closing.push(() => sink.close());
      const events: unknown[] = [];
      sink.on('retry', (event) => events.push(event));
      sink.on('stopped', (event) => events.push(event));

      const error = await sink.run({ untilCaughtUp: true }).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(SinkError);
      expect(logger.lines.length).toBeGreaterThan(0);
      expect(shownText(error, events, logger.lines)).not.toContain(SECRET);
    },
  );

  it('should exit 1 on a wrong database password from the command line without printing it', async () => {
    const stream = await real.newStream('no-passwords-cli');
    const run = await runRecorded(
      ['status', '--sink', 'b', '--source', stream, '--url', inject('rabbitmqUrl')],
      { DATABASE_URL: `${withSecret(db.url)}?sslpassword=${SECRET}` },
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^stream-windows: could not read the checkpoints from database postgres:\/\/stream_windows@127\.0\.0\.1:\d+\/\w+: password authentication failed/,
    );
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });
});
