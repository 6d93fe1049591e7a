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
