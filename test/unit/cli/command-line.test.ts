// The command line of stream-windows, run in-process (no broker is reached: every case here
// ends before connecting). test/integration/cli.test.ts runs the command itself.
import { describe, expect, it } from 'vitest';
import { runRecorded } from '../../support/clients/cli-run.js';

describe('the stream-windows command line', () => {
  it('should print the help of a command on stdout, asked either way', async () => {
    for (const name of ['status', 'tail']) {
      const asked = await runRecorded(['help', name]);
      expect(asked.code).toBe(0);
      expect(asked.stderr).toBe('');
      expect(asked.stdout).toContain(`Usage: stream-windows ${name} `);
      expect(asked.stdout).toContain('--url URL');
      expect(asked.stdout).toContain('2  usage error');
      expect(await runRecorded([name, '--help'])).toEqual(asked);
      expect(await runRecorded([name, '-h'])).toEqual(asked);
    }
    expect((await runRecorded(['-h'])).stdout).toContain('Commands:\n  status');
    expect(await runRecorded(['help'])).toEqual(await runRecorded(['--help']));
  });

  it('should exit 2 with the reason and a pointer to the help on stderr for every wrong command line', async () => {
    const cases: [string[], string, string][] = [
      [['stats'], "unknown command 'stats'", '--help'],
      [['--json'], "unknown option '--json'", '--help'],
      [['help', 'stats'], "unknown command 'stats'", '--help'],
      [['help', 'status', 'tail'], 'help takes one command, given: status tail', '--help'],
      [['status', '--target', 't', '--producer', 'p'], 'status needs --source', 'help status'],
      [['status', '--source', 's', '--producer', 'p'], 'status needs --target', 'help status'],
      [
        ['status', '--source', 's', '--target', 't', '--producer', ''],
        'status needs --producer',
        'help status',
      ],
      [
        ['status', '--super-stream', 's', '--target', 't', '--source', 's', '--job', 'j'],
        'status takes --super-stream and --job instead of --source and --producer',
        'help status',
      ],
      [['status', '--super-stream', 's', '--target', 't'], 'status needs --job', 'help status'],
      [['tail'], 'tail needs --target', 'help tail'],
      [
        ['tail', '--target', 't', '--from=-1'],
        "--from must be first, last, next or an offset (an integer >= 0), given: '-1'",
        'help tail',
      ],
      [
        ['tail', '--target', 't', '--from', '1.5'],
        "--from must be first, last, next or an offset (an integer >= 0), given: '1.5'",
        'help tail',
      ],
      [
        ['tail', '--target', 't', '--count', '0'],
        "--count must be an integer >= 1, given: '0'",
        'help tail',
      ],
      [
        ['tail', '--target', 't', '--count', 'all'],
        "--count must be an integer >= 1, given: 'all'",
        'help tail',
      ],
      [
        ['tail', '--target', 't', '--url', 'amqp://h/'],
        "url must start with rabbitmq-stream:// or rabbitmq-stream+tls://, given: 'amqp://h/'",
        'help tail',
      ],
    ];
    for (const [args, reason, help] of cases) {
      expect(await runRecorded(args)).toEqual({
        code: 2,
        stdout: '',
        stderr: `stream-windows: ${reason}\nRun 'stream-windows ${help}' for usage.\n`,
      });
    }
  });

  it('should refuse a stream name RabbitMQ would not serve as a usage error, before connecting', async () => {
    const nowhere = 'rabbitmq-stream://guest:guest@127.0.0.1:1/'; // a check after connecting fails there
    const long = 'x'.repeat(234);
    const rule = (option: string, bytes: number, vhost = '/') =>
      `${option} must be at most ${vhost === '/' ? '233' : '224'} UTF-8 bytes (on vhost '${vhost}': ` +
      "RabbitMQ stores a stream in a directory '<vhost>_<name>_<time>' of at most 255 bytes), " +
      `not ${String(bytes)}, given: '${'x'.repeat(32)}…'`;
    const cases: [string[], string, string][] = [
      [['tail', '--target', long], rule('--target', 234), 'help tail'],
      [
        ['status', '--source', long, '--target', 't', '--producer', 'p'],
        rule('--source', 234),
        'help status',
      ],
      [
        ['status', '--source', 's', '--target', long, '--producer', 'p'],
        rule('--target', 234),
        'help status',
      ],
      [
        ['status', '--super-stream', long, '--target', 't', '--job', 'j'],
        rule('--super-stream', 234),
        'help status',
      ],
      [['status', '--sink', 'n', '--source', long], rule('--source', 234), 'help status'],
      [
        ['status', '--sink', 'n', '--super-stream', long],
        rule('--super-stream', 234),
        'help status',
      ],
      [
        ['skip', '--source', long, '--target', 't', '--producer', 'p', '--offset', '1'],
        rule('--source', 234),
        'help skip',
      ],
      [
        ['skip', '--source', 's', '--target', long, '--producer', 'p', '--offset', '1'],
        rule('--target', 234),
        'help skip',
      ],
      [
        ['tail', '--target', 'amq.t'],
        "--target must not start with 'amq.' (reserved by RabbitMQ), given: 'amq.t'",
        'help tail',
      ],
      [
        ['tail', '--target', 'x'.repeat(225), '--url', `${nowhere}production`],
        rule('--target', 225, 'production'),
        'help tail',
      ],
    ];
    for (const [args, reason, help] of cases) {
      const url = args.includes('--url') ? [] : ['--url', nowhere];
      expect(await runRecorded([...args, ...url])).toEqual({
        code: 2,
        stdout: '',
        stderr: `stream-windows: ${reason}\nRun 'stream-windows ${help}' for usage.\n`,
      });
    }
  });

  it("should report node's own parsing errors (unknown option, missing value, stray argument) as usage errors", async () => {
    for (const args of [
      ['tail', '--target', 't', '--colour'],
      ['tail', '--target'],
      ['status', 'extra'],
    ]) {
      const { code, stdout, stderr } = await runRecorded(args);
      expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
      expect(stderr).toMatch(
        /^stream-windows: .+\nRun 'stream-windows help (tail|status)' for usage\.\n$/,
      );
    }
  });
});
