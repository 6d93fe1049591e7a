// The command never prints a password it was given: a malformed --url, RABBITMQ_STREAM_URL or
// --database (of a sink or a relay), a URL where a command or an argument was expected, an
// unreachable broker. What it prints of a URL keeps the user and masks the password.
import { describe, expect, it } from 'vitest';
import { runRecorded } from '../../support/clients/cli-run.js';
import { SECRET } from '../../support/secrets/shown-text.js';

const JOB = ['--source', 's', '--target', 't', '--producer', 'p'];
const SINK = ['--sink', 'b', '--source', 's'];
const RELAY = ['--relay', 'r', '--stream', 's'];
/** Nothing listens on port 1: the connection is refused at once. */
const DOWN = `rabbitmq-stream://guest:${SECRET}@127.0.0.1:1/`;

describe('the command and passwords', () => {
  it.each([
    [
      'a --url of another scheme',
      ['status', ...JOB, '--url', `amqp://guest:${SECRET}@127.0.0.1:5552/`],
      {},
      "url must start with rabbitmq-stream:// or rabbitmq-stream+tls://, given: 'amqp://guest:***@127.0.0.1:5552/'",
    ],
    [
      'a --url that is no URL (a port in words)',
      ['status', ...JOB, '--url', `rabbitmq-stream://guest:${SECRET}@127.0.0.1:port/`],
      {},
      "url must be a rabbitmq-stream:// URL, given: 'rabbitmq-stream://guest:***@127.0.0.1:port/'",
    ],
    [
      'a --url whose password holds an @',
      ['tail', '--target', 't', '--url', `amqp://guest:${SECRET}@x@127.0.0.1:5552/`],
      {},
      "url must start with rabbitmq-stream:// or rabbitmq-stream+tls://, given: 'amqp://guest:***@127.0.0.1:5552/'",
    ],
    [
      'a RABBITMQ_STREAM_URL list with a bad node',
      ['status', ...JOB],
      { RABBITMQ_STREAM_URL: `${DOWN},amqp://guest:${SECRET}@h/` },
      "urls[1] must start with rabbitmq-stream:// or rabbitmq-stream+tls://, given: 'amqp://guest:***@h/'",
    ],
    [
      'a URL as a stray argument',
      ['status', ...JOB, DOWN],
      {},
      "Unexpected argument 'rabbitmq-stream://guest:***@127.0.0.1:1/'. This command does not take positional arguments",
    ],
    [
      'a URL as the command',
      [DOWN],
      {},
      "unknown command 'rabbitmq-stream://guest:***@127.0.0.1:1/'",
    ],
    [
      'a URL after help',
      ['help', 'status', DOWN],
      {},
      'help takes one command, given: status rabbitmq-stream://guest:***@127.0.0.1:1/',
    ],
    [
      'a libpq connection string as --database',
      ['status', ...SINK, '--database', `host=h password=${SECRET}`],
      {},
      '--database is not a URL such as postgres://user@host:port/database (with a password: user:password@host)',
    ],
    [
      'a DATABASE_URL of another scheme',
      ['status', ...SINK],
      { DATABASE_URL: `mysql://u:${SECRET}@h/db` },
      'DATABASE_URL must be a postgres:// or postgresql:// URL, given mysql://...',
    ],
    [
      "a relay's DATABASE_URL of another scheme",
      ['status', ...RELAY],
      { DATABASE_URL: `mysql://u:${SECRET}@h/db` },
      'DATABASE_URL must be a postgres:// or postgresql:// URL, given mysql://...',
    ],
    [
      "a relay's --database that is no URL (a port in words)",
      ['status', ...RELAY, '--database', `postgres://u:${SECRET}@h:port/db`],
      {},
      '--database is not a URL such as postgres://user@host:port/database (with a password: user:password@host)',
    ],
  ])('should exit 2 on %s, masking the password', async (_, args, env, reason) => {
    const run = await runRecorded(args, env);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(`stream-windows: ${reason}`);
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });

  it.each([
    ['status', ...JOB],
    ['tail', '--target', 't'],
    ['skip', ...JOB, '--offset', '1'],
    ['status', ...SINK, '--database', `postgres://u:${SECRET}@127.0.0.1:1/db?password=${SECRET}`],
    ['status', ...RELAY, '--database', `postgres://u:${SECRET}@127.0.0.1:1/db?password=${SECRET}`],
    [
      'status',
      '--relay',
      'r',
      '--super-stream',
      's',
      '--database',
      `postgres://u:${SECRET}@127.0.0.1:1/db?password=${SECRET}`,
    ],
  ])('should exit 1 naming the unreachable broker by its address only: %s', async (...args) => {
    const run = await runRecorded([...args, '--url', DOWN]);
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(
        /^stream-windows: cannot connect to RabbitMQ at 127\.0\.0\.1:1: .*ECONNREFUSED/,
      ) as string,
    });
    expect(run.stderr).not.toContain(SECRET);
  });
});
