// The stream-windows command as a user runs it, against the real broker: in a pipe (stdout
// for data, stderr for messages, exit codes, JSON) and in a pseudo-terminal made by
// util-linux `script` (tables with colours, NO_COLOR, the progress bar).
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  lastWriteId,
  readResults,
  type ReadResult,
} from '../../src/index.js';
import { partitionProducer } from '../../src/partitioning/partitioned-runner.js';
import { encodeResult } from '../../src/result-format/result-encoder.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const url = inject('rabbitmqUrl');
const root = fileURLToPath(new URL('../..', import.meta.url));
const main = 'src/cli/main.ts';
const progressChild = 'test/integration/cli-progress-child.ts';
const version = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { version: string })
  .version;
/**
 * A bound on one run of the command: far more than it needs (about a second idle; five at once
 * took over 20 s each at a load average of 26).
 */
const RUN_BOUND_MS = bound(45_000);

/** What the children see: the broker's URL, and none of the runner's CI or NO_COLOR. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { CI: _ci, NO_COLOR: _noColor, ...env } = process.env;
  return { ...env, RABBITMQ_STREAM_URL: url, ...extra };
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a script with node and tsx, its stdout and stderr in pipes. */
function inPipe(script: string, args: readonly string[], env = childEnv()): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: root, env, timeout: RUN_BOUND_MS },
      (error, stdout, stderr) =>
        resolve({
          code: error === null ? 0 : ((error.code as number | null) ?? null),
          stdout,
          stderr,
        }),
    );
  });
}

const cli = (args: readonly string[], env?: NodeJS.ProcessEnv) => inPipe(main, args, env);

/** The shell command that runs a script with node and tsx. */
function shellCommand(script: string, args: readonly string[]): string {
  return [process.execPath, '--import', 'tsx', script, ...args]
    .map((arg) => `'${arg.replaceAll("'", "'\\''")}'`)
    .join(' ');
}

/**
 * Runs the command piped into `consumer` in bash, under pipefail: the exit status is the
 * command's, unless the consumer failed. stderr is both's.
 */
function piped(args: readonly string[], consumer: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      '/bin/bash',
      ['-c', `set -o pipefail; ${shellCommand(main, args)} | ${consumer}`],
      { cwd: root, env: childEnv(), timeout: RUN_BOUND_MS },
      (error, stdout, stderr) =>
        resolve({
          code: error === null ? 0 : ((error.code as number | null) ?? null),
          stdout,
          stderr,
        }),
    );
  });
}

/** Runs a script in a pseudo-terminal: stdout and stderr are both the terminal, read here. */
function inTerminal(script: string, args: readonly string[], env = childEnv()): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      '/usr/bin/script',
      ['-qfec', shellCommand(script, args), '/dev/null'],
      { cwd: root, env, timeout: RUN_BOUND_MS },
      (error, stdout) =>
        resolve({
          code: error === null ? 0 : ((error.code as number | null) ?? null),
          stdout,
          stderr: '',
        }),
    );
  });
}

const ESC = '\x1b[';

/** JSON lines of a --json run. */
function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The target offsets of the results a --json run printed lines of, in order. */
function resultOffsets(stdout: string): unknown[] {
  return [...new Set(jsonLines(stdout).map((line) => line.offset))];
}

/** The readings the job of `results` read. */
let readings: string;
/** Five results of three outputs (sensors a, b, c; one-minute windows) and their raw messages. */
let results: string;
let resultMessages: Uint8Array[];
let expected: ReadResult<number>[];

beforeAll(async () => {
  const source = await real.newStream('cli-in');
  readings = source;
  results = await real.newStream('cli-out');
  const t0 = Date.UTC(2026, 0, 1);
  await publishAll(
    real.rabbit,
    source,
    Array.from({ length: 18 }, (_, i) =>
      jsonMessage(
        { sensor: 'abc'[i % 3], value: i, t: t0 + 20_000 * i },
        { creationTime: t0 + 20_000 * i },
      ),
    ),
  );
  const target = real.rabbit.target(results, { producer: 'job' });
  await aggregate<{ sensor: string; value: number }>(real.rabbit.source(source))
    .tumbling('1m')
    .key((r) => r.sensor)
    .reduce((total, r) => total + r.value, 0)
    .to(target, { retryDelayMs: 0 })
    .run({ untilCaughtUp: true });
  await target.close();
  resultMessages = await readAll(real.rabbit, results);
  expected = [];
  for await (const item of readResults<number>(real.rabbit.source(results), {
    untilCaughtUp: true,
  })) {
    expected.push(item);
  }
  expect(expected).toHaveLength(5);
});

describe('stream-windows in a pipe', () => {
  // Every case of the command line is in test/unit/cli/command-line.test.ts (in-process);
  // these check what only a process shows: its streams and its exit code.
  it('should print help and the version on stdout and exit 0', async () => {
    const [help, versionRun] = await Promise.all([cli(['help', 'status']), cli(['--version'])]);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('Usage: stream-windows status --source S');
    expect(versionRun).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('should exit 2 with the reason on stderr for a wrong command line', async () => {
    const [none, wrong] = await Promise.all([
      cli([]),
      cli(['tail', '--target', 't', '--from', 'yesterday']),
    ]);
    expect(none).toMatchObject({ code: 2, stdout: '' });
    expect(none.stderr).toContain('Usage: stream-windows <command> [options]');
    expect(wrong).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "stream-windows: --from must be first, last, next or an offset (an integer >= 0), given: 'yesterday'\n" +
        "Run 'stream-windows help tail' for usage.\n",
    });
  });

  it('should report where a job stands as one JSON object', async () => {
    const source = await real.newStream('cli-status');
    const target = await real.newStream('cli-status-out');
    const before = Date.now();
    await publishAll(
      real.rabbit,
      source,
      Array.from({ length: 10 }, (_, n) => jsonMessage({ n })),
    );
    const afterFirst = Date.now();
    await sleep(20); // the second chunk gets a later broker timestamp
    const beforeSecond = Date.now();
    await publishAll(
      real.rabbit,
      source,
      Array.from({ length: 10 }, (_, n) => jsonMessage({ n })),
    );
    const after = Date.now();
    // As an earlier version published its step ending at offset 4: under id 4.
    const producer = real.rabbit.target(target, { producer: 'job' });
    await producer.publish(4n, [jsonMessage({ a: 'result' })]);
    await producer.close();

    const run = await cli([
      'status',
      '--source',
      source,
      '--target',
      target,
      '--producer',
      'job',
      '--json',
    ]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const status = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(status).toMatchObject({
      source,
      target,
      producer: 'job',
      lastPublishingId: '4',
      lastOffset: '4',
      resumeFrom: '5',
      sourceEnd: '20',
      lagMessages: '15',
    });
    // Broker timestamps on this machine's clock, in ms: bounded by the publishes.
    const resumeAt = status.resumeChunkTime as number;
    const lastAt = status.lastChunkTime as number;
    expect(resumeAt).toBeGreaterThanOrEqual(before - 1);
    expect(resumeAt).toBeLessThanOrEqual(afterFirst + 1);
    expect(lastAt).toBeGreaterThanOrEqual(beforeSecond - 1);
    expect(lastAt).toBeLessThanOrEqual(after + 1);
    expect(status.lagMs).toBe(lastAt - resumeAt);
    // Where each stream lives, as the Metadata query tells (one node here: no replicas).
    for (const [field, stream] of [
      ['sourceMembers', source],
      ['targetMembers', target],
    ] as const) {
      const { leader, replicas } = await real.rabbit.members(stream);
      expect(status[field]).toEqual({ leader: `${leader.host}:${leader.port}`, replicas: [] });
      expect(replicas).toEqual([]);
    }
  });

  it('should report a partitioned job partition by partition, under its producer name for each', async () => {
    const superStream = `cli-super-${process.pid}-${Date.now()}`;
    const partitions = await real.rabbit.createSuperStream(superStream, { partitions: 2 });
    onTestFinished(() => real.rabbit.deleteSuperStream(superStream));
    const target = await real.newStream('cli-super-out');
    const messages = (n: number) => Array.from({ length: n }, (_, i) => jsonMessage({ i }));
    await publishAll(real.rabbit, partitions[0] ?? '', messages(3));
    await publishAll(real.rabbit, partitions[1] ?? '', messages(1));
    // The loop of partition 0 stored its result for offsets 0..1; partition 1's never published.
    const first = real.rabbit.target(target, {
      producer: partitionProducer('rollup', partitions[0] ?? ''),
    });
    await first.publish(1n, [jsonMessage({ a: 'result' })]);
    await first.close();

    const run = await cli([
      'status',
      '--super-stream',
      superStream,
      '--target',
      target,
      '--job',
      'rollup',
      '--json',
    ]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const rows = JSON.parse(run.stdout) as Record<string, unknown>[];
    expect(
      rows.map(({ source, producer, resumeFrom, sourceEnd, lagMessages }) => ({
        source,
        producer,
        resumeFrom,
        sourceEnd,
        lagMessages,
      })),
    ).toEqual([
      {
        source: partitions[0],
        producer: partitionProducer('rollup', partitions[0] ?? ''),
        resumeFrom: '2',
        sourceEnd: '3',
        lagMessages: '1',
      },
      {
        source: partitions[1],
        producer: partitionProducer('rollup', partitions[1] ?? ''),
        resumeFrom: 'first',
        sourceEnd: '1',
        lagMessages: '1',
      },
    ]);
  });

  it('should say that a producer never published on the target rather than show it as fresh', async () => {
    // 'jbo' is a typo of the job's producer 'job', which published on the target: 'jbo' never
    // did, and its last publishing id of 0 says so.
    const status = (producer: string, json: string[] = []) =>
      cli(['status', '--source', results, '--target', results, '--producer', producer, ...json]);
    const [table, json] = await Promise.all([status('jbo'), status('jbo', ['--json'])]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const [, row, note] = table.stdout.split('\n');
    expect(row?.split(/\s+/).slice(0, 5)).toEqual([results, results, 'jbo', 'none', 'first']);
    expect(note).toBe(
      `jbo has never published on ${results}: the job would start at ${results}'s first offset (a new job, or a misspelt producer name?)`,
    );
    expect(JSON.parse(json.stdout)).toMatchObject({
      producer: 'jbo',
      lastPublishingId: '0',
      published: false,
      resumeFrom: 'first',
    });
  });

  it('should reach the broker through the next node --url lists while the first is down', async () => {
    const down = url.replace(/:\d+\//, ':1/'); // nothing listens on port 1
    expect(down).not.toBe(url);
    const run = await cli([
      'status',
      ...['--source', results, '--target', results, '--producer', 'jbo', '--json'],
      ...['--url', `${down},${url}`],
    ]);
    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toMatchObject({ producer: 'jbo', published: false });
  });

  // A dozen runs of the command (about 2 s each here, five at once): more than the default bound.
  it(
    'should step a job stopped by a poison message over it with skip, and refuse any other offset',
    async () => {
      const source = await real.newStream('cli-skip');
      const target = await real.newStream('cli-skip-out');
      const poison = new TextEncoder().encode('{ not json');
      await publishAll(
        real.rabbit,
        source,
        Array.from({ length: 6 }, (_, n) => (n === 3 ? poison : jsonMessage({ n }))),
      );
      // A target of its own per run: one producer name is declared once per connection.
      const job = async () => {
        const output = real.rabbit.target(target, { producer: 'job' });
        try {
          return await aggregate<{ n: number }>(real.rabbit.source(source))
            .count(2)
            .reduce((sum, v) => sum + v.n, 0)
            .to(output, { retryDelayMs: 0 })
            .run({ untilCaughtUp: true });
        } finally {
          await output.close();
        }
      };
      // Step 0..1 published; 2 open in memory only when 3 stops the job.
      await expect(job()).rejects.toMatchObject({ name: 'ProcessingError', offset: 3n });
      const skip = (...more: string[]) =>
        cli(['skip', '--source', source, '--target', target, '--producer', 'job', ...more]);
      const status = async () =>
        JSON.parse(
          (
            await cli([
              'status',
              '--source',
              source,
              '--target',
              target,
              '--producer',
              'job',
              '--json',
            ])
          ).stdout,
        ) as Record<string, unknown>;
      expect(await status()).toMatchObject({
        lastPublishingId: String(lastWriteId(1n)),
        lastOffset: '1',
        stoppedAt: '3',
      });
      const table = await cli([
        'status',
        '--source',
        source,
        '--target',
        target,
        '--producer',
        'job',
      ]);
      // LAST OFFSET and RESUME AT: the step's last offset, not its publishing id.
      expect(table.stdout.split('\n')[1]?.split(/\s+/).slice(0, 5)).toEqual([
        source,
        target,
        'job',
        '1',
        '2',
      ]);
      expect(table.stdout).toContain(
        `job stopped at offset 3 of ${source}, a message it could not process (the job's error ` +
          `says why); after a look at it, 'stream-windows skip --source ${source} --target ` +
          `${target} --producer job --offset 3' steps over it`,
      );

      const [missing, malformed, beyond, past, other] = await Promise.all([
        skip(),
        skip('--offset', 'three'),
        skip('--offset', '6'),
        skip('--offset', '1'),
        skip('--offset', '4'),
      ]);
      expect(missing).toEqual({
        code: 2,
        stdout: '',
        stderr: "stream-windows: skip needs --offset\nRun 'stream-windows help skip' for usage.\n",
      });
      expect(malformed).toMatchObject({
        code: 2,
        stderr: expect.stringContaining(
          "--offset must be an offset (an integer >= 0), given: 'three'",
        ),
      });
      expect(beyond).toEqual({
        code: 1,
        stdout: '',
        stderr: `stream-windows: offset must be a message of '${source}', whose end is 6, given: 6\n`,
      });
      expect(past).toEqual({
        code: 1,
        stdout: '',
        stderr:
          `stream-windows: offset must be above the last offset 1 that producer 'job' published ` +
          `on '${target}': the job is past it already, given: 1\n`,
      });
      expect(other).toEqual({
        code: 1,
        stdout: '',
        stderr:
          'stream-windows: offset must be the message the job stopped at: the job last stopped at offset 3, given: 4\n',
      });
      expect(await status()).not.toHaveProperty('skipRequested');

      const accepted = await skip('--offset', '3', '--json');
      expect(accepted).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(accepted.stdout)).toEqual({
        source,
        target,
        producer: 'job',
        offset: '3',
        lastPublishingId: String(lastWriteId(1n)),
      });
      expect(await status()).toMatchObject({ stoppedAt: '3', skipRequested: '3' });

      await job();
      const stored = (await readAll(real.rabbit, target)).map((bytes) => decodeResult(bytes));
      expect(stored.map((r) => [r.firstOffset, r.lastOffset, r.outputs[0]?.value])).toEqual([
        [0n, 1n, 1],
        [2n, 3n, 2],
        [4n, 5n, 9],
      ]);
      expect(stored[1]?.deadLetters).toMatchObject([
        { offset: 3n, stage: 'decode', error: expect.stringMatching(/^skipped by operator/) },
      ]);
      const after = await status();
      expect(after).toMatchObject({ lastPublishingId: String(lastWriteId(5n)), lastOffset: '5' });
      expect(after).not.toHaveProperty('stoppedAt');
    },
    bound(120_000),
  );

  it('should exit 1 naming a stream that does not exist', async () => {
    const missing = `cli-missing-${Date.now()}`;
    const run = await cli([
      'status',
      '--source',
      missing,
      '--target',
      results,
      '--producer',
      'job',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `stream-windows: reading stream '${missing}' failed: asking for its leader failed with code 2 (stream does not exist)\n`,
    );
  });

  it.each(['first', 'last', 'next', '0'])(
    'should print nothing on stdout when tail follows a stream that does not exist (--from %s)',
    async (from) => {
      const missing = `cli-missing-tail-${Date.now()}`;
      const run = await cli(['tail', '--target', missing, '--from', from]);
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr: `stream-windows: reading stream '${missing}' failed: asking for its leader failed with code 2 (stream does not exist)\n`,
      });
    },
  );

  it('should print the results of a target as JSON lines, stopping after --count', async () => {
    const run = await cli([
      'tail',
      '--target',
      results,
      '--from',
      'first',
      '--count',
      '4',
      '--json',
    ]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = jsonLines(run.stdout);
    expect(lines).toEqual(
      expected.slice(0, 4).flatMap(({ offset, next, result }) =>
        result.outputs.map((output) => ({
          kind: 'output',
          offset: String(offset),
          next: String(next),
          producer: 'job',
          source: result.source,
          windowing: 'tumbling(1m)',
          publishingId: String(result.lastOffset),
          lastOffset: String(result.lastOffset),
          window: {
            start: output.start,
            end: output.end,
            startIso: new Date(output.start).toISOString(),
            endIso: new Date(output.end).toISOString(),
          },
          key: output.key,
          count: output.count,
          value: output.value,
          final: true,
          continues: false,
        })),
      ),
    );
    expect(lines).toHaveLength(12); // three sensors a window
  });

  it('should skip a message that is not a result with a line on stderr naming its offset', async () => {
    const mixed = await real.newStream('cli-mixed');
    await publishAll(real.rabbit, mixed, [
      resultMessages[0] as Uint8Array,
      jsonMessage({ own: 'format' }),
      resultMessages[1] as Uint8Array,
    ]);
    const run = await cli(['tail', '--target', mixed, '--from', 'first', '--count', '2', '--json']);
    expect(run.code).toBe(0);
    expect(resultOffsets(run.stdout)).toEqual(['0', '2']);
    expect(run.stderr).toMatch(
      new RegExp(
        `^stream-windows: skipped: the message at offset 1 of stream '${mixed}' is not a readable result: .+\\n$`,
      ),
    );
  });

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'should follow from the last result, print new ones as they come, and stop on %s',
    async (stopSignal) => {
      const followed = await real.newStream('cli-follow');
      await publishAll(real.rabbit, followed, resultMessages.slice(0, 3));
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', main, 'tail', '--target', followed, '--json'],
        {
          cwd: root,
          env: childEnv(),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      let grew = (): void => undefined;
      child.stdout.on('data', (data: Buffer) => {
        stdout += data.toString();
        grew();
      });
      child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
      const lines = async (n: number): Promise<void> => {
        while (stdout.split('\n').length - 1 < n) {
          await new Promise<void>((resolve) => (grew = resolve));
        }
      };
      const exited = once(child, 'exit');
      // Whatever happens here, the child does not outlive the test.
      const bound = setTimeout(() => child.kill('SIGKILL'), RUN_BOUND_MS);
      try {
        await lines(3); // a result's three outputs
        const writer = real.rabbit.target(followed, { producer: `later-${stopSignal}` });
        await writer.publish(1n, [resultMessages[3] as Uint8Array]);
        await writer.close();
        await lines(6);
        child.kill(stopSignal);
      } catch (error) {
        child.kill('SIGKILL');
        throw error;
      }
      const [code, signal] = (await exited) as [number | null, string | null];
      clearTimeout(bound);
      expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
      expect(resultOffsets(stdout)).toEqual(['2', '3']);
    },
  );

  it('should exit 0 on SIGINT while it is still connecting', async () => {
    // A broker that takes the connection and never answers: the connect waits (10 s bound).
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    onTestFinished(() => {
      for (const socket of sockets) socket.destroy();
      silent.close();
    });
    const { port } = silent.address() as AddressInfo;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        main,
        'tail',
        '--target',
        'any',
        '--url',
        `rabbitmq-stream://guest:guest@127.0.0.1:${port}/`,
      ],
      { cwd: root, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (data: Buffer) => (output += data.toString()));
    child.stderr.on('data', (data: Buffer) => (output += data.toString()));
    const exited = once(child, 'exit');
    const bound = setTimeout(() => child.kill('SIGKILL'), RUN_BOUND_MS);
    await Promise.race([once(silent, 'connection'), exited]);
    child.kill('SIGINT');
    const [code, signal] = (await exited) as [number | null, string | null];
    clearTimeout(bound);
    expect({ code, signal, output }).toEqual({ code: 0, signal: null, output: '' });
  });

  it('should stay silent with its progress bar when stderr is a pipe', async () => {
    const { source, target } = await backlog();
    const run = await inPipe(progressChild, [url, source, target]);
    expect(run).toEqual({ code: 0, stdout: 'done\n', stderr: '' });
  });
});

describe('stream-windows tail --json for other tools', () => {
  // Ten runs of the pipeline, two at a time (a couple of seconds each here).
  it(
    'should exit 0 within a second or so once head has its lines, on a quiet target (| head -n 3)',
    async () => {
      // Three results, no new ones: tail prints the last result's three outputs, then waits.
      const quiet = await real.newStream('cli-quiet-head');
      await publishAll(real.rabbit, quiet, resultMessages.slice(0, 3));
      const command = shellCommand(main, ['tail', '--target', quiet, '--json']);
      // How long the pipeline outlives head: bash waits for both, and head's last line is read here.
      const pipeline = async (): Promise<{
        code: number | null;
        stderr: string;
        lines: number;
        afterHeadMs: number;
      }> => {
        const child = spawn('/bin/bash', ['-c', `set -o pipefail; ${command} | head -n 3`], {
          cwd: root,
          env: childEnv(),
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true, // a group of its own: a tail that hangs is killed with its shell
        });
        const bound = setTimeout(
          () => process.kill(-(child.pid as number), 'SIGKILL'),
          RUN_BOUND_MS,
        );
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
        let headDone = 0;
        child.stdout.on('data', (data: Buffer) => {
          stdout += data.toString();
          if (stdout.split('\n').length - 1 === 3) headDone = performance.now();
        });
        const [code] = (await once(child, 'exit')) as [number | null];
        clearTimeout(bound);
        return {
          code,
          stderr,
          lines: jsonLines(stdout).length,
          afterHeadMs: performance.now() - headDone,
        };
      };
      const runs = [];
      for (let pair = 0; pair < 5; pair++) {
        runs.push(...(await Promise.all([pipeline(), pipeline()])));
      }
      // A bound well below the run's (20 s): the old tail waited for a next result forever.
      const late = runs.filter(
        (run) => run.code !== 0 || run.stderr !== '' || run.lines !== 3 || run.afterHeadMs > 3_000,
      );
      expect(late).toEqual([]);
    },
    bound(240_000),
  );

  it(
    'should exit 0 at once when its parent closes its end of stdout, a socket, while it waited',
    async () => {
      // A parent in Node gives a child's stdout a Unix socket (libuv's socketpair), not a pipe.
      const quiet = await real.newStream('cli-gone');
      await publishAll(real.rabbit, quiet, resultMessages.slice(0, 1));
      const gone = async (): Promise<{
        code: number | null;
        stderr: string;
        afterCloseMs: number;
      }> => {
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', main, 'tail', '--target', quiet, '--from', 'first', '--json'],
          { cwd: root, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let stderr = '';
        child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
        const exited = once(child, 'exit');
        const bound = setTimeout(() => child.kill('SIGKILL'), RUN_BOUND_MS);
        await Promise.race([once(child.stdout, 'data'), exited]); // it has printed, and waits
        child.stdout.destroy(); // the reader goes away
        const closed = performance.now();
        const [code] = (await exited) as [number | null];
        clearTimeout(bound);
        return { code, stderr, afterCloseMs: performance.now() - closed };
      };
      const runs = [
        ...(await Promise.all([gone(), gone()])),
        ...(await Promise.all([gone(), gone()])),
      ];
      // The old tail heard it only at its next line, which never came.
      expect(
        runs.filter((run) => run.code !== 0 || run.stderr !== '' || run.afterCloseMs > 3_000),
      ).toEqual([]);
    },
    bound(120_000),
  );

  it('should give jq one JSON object per output to select from', async () => {
    const run = await piped(
      ['tail', '--target', results, '--from', 'first', '--count', '5', '--json'],
      `/usr/bin/jq -c 'select(.kind == "output" and .key == "b") | [.offset, .window.startIso, .value]'`,
    );
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe(
      expected
        .flatMap(({ offset, result }) =>
          result.outputs
            .filter((output) => output.key === 'b')
            .map(
              (b) =>
                `${JSON.stringify([String(offset), new Date(b.start).toISOString(), b.value])}\n`,
            ),
        )
        .join(''),
    );
  });

  it('should give late values and dead letters lines of their own kind', async () => {
    const source = await real.newStream('cli-late-in');
    const target = await real.newStream('cli-late-out');
    const t0 = Date.UTC(2026, 0, 1);
    const at = (seconds: number, n: number) =>
      jsonMessage({ n }, { creationTime: t0 + seconds * 1000 });
    await publishAll(real.rabbit, source, [
      at(0, 1),
      at(20, 2),
      at(70, 3), // closes the first minute: the result of offsets 0..1
      at(10, 4), // late: its minute is closed
      new TextEncoder().encode('{ not json'), // offset 4: dead-lettered
      at(130, 5), // closes the second: offsets 2..4, with the late value and the dead letter
    ]);
    const output = real.rabbit.target(target, { producer: 'late-job' });
    try {
      await aggregate<{ n: number }>(real.rabbit.source(source))
        .tumbling('1m')
        .onError('dead-letter')
        .reduce((sum, v) => sum + v.n, 0)
        .to(output, { retryDelayMs: 0 })
        .run({ untilCaughtUp: true });
    } finally {
      await output.close();
    }
    const run = await piped(
      ['tail', '--target', target, '--from', 'first', '--count', '2', '--json'],
      `/usr/bin/jq -c '{kind, offset, publishingId, start: .window.start, value, sourceOffset, stage}'`,
    );
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const second = { offset: '1', publishingId: '4', start: t0 + 60_000 };
    expect(jsonLines(run.stdout)).toEqual([
      {
        kind: 'output',
        offset: '0',
        publishingId: '1',
        start: t0,
        value: 3,
        sourceOffset: null,
        stage: null,
      },
      { kind: 'output', ...second, value: 3, sourceOffset: null, stage: null },
      { kind: 'late', ...second, value: { n: 4 }, sourceOffset: null, stage: null },
      { kind: 'dead-letter', ...second, value: null, sourceOffset: '4', stage: 'decode' },
    ]);
    // The table shows the dead letter too, on a row of its own after the result's outputs.
    const table = await cli(['tail', '--target', target, '--from', 'first', '--count', '2']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(table.stdout.split('\n').slice(1, -1)).toEqual([
      expect.stringMatching(new RegExp(`^0 +${iso(t0)} +${iso(t0 + 60_000)} +null +2 +3$`)),
      expect.stringMatching(
        new RegExp(`^1 +${iso(t0 + 60_000)} +${iso(t0 + 120_000)} +null +1 +3$`),
      ),
      expect.stringMatching(
        new RegExp(
          `^1 +${iso(t0 + 60_000)} +${iso(t0 + 120_000)} +- +- +dead letter: source offset 4, decode failed: .+`,
        ),
      ),
    ]);
  });

  it('should exit 0, with nothing on stderr, when its reader stops early (| head -n 3)', async () => {
    // One result of 2,000 outputs: far more lines than a pipe buffers, so tail is still
    // writing when head has its three and goes away.
    const big = await real.newStream('cli-head');
    const t0 = Date.UTC(2026, 0, 1);
    const [message] = encodeResult(
      {
        firstOffset: 0n,
        lastOffset: 1999n,
        messages: 2000,
        window: { start: t0, end: t0 + 60_000 },
        outputs: Array.from({ length: 2000 }, (_, n) => ({
          key: `customer-${n}`,
          count: 1,
          value: { total: n, note: 'x'.repeat(100) },
        })),
        late: [],
        lateDropped: 0,
        filtered: 0,
        deadLetters: [],
      },
      { source: 'orders', producer: 'big-job', window: 'tumbling(1m)' },
      'sections',
    );
    await publishAll(real.rabbit, big, [message as Uint8Array]);
    // No --count: only the closed pipe ends it.
    const run = await piped(['tail', '--target', big, '--from', 'first', '--json'], 'head -n 3');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(jsonLines(run.stdout).map((line) => [line.kind, line.key])).toEqual([
      ['output', 'customer-0'],
      ['output', 'customer-1'],
      ['output', 'customer-2'],
    ]);
  });
});

let backlogSource: Promise<string> | undefined;

/**
 * A source of 600 messages in many chunks (made once, shared), and an empty target of its
 * own, for a job to catch up with its progress bar.
 */
async function backlog(): Promise<{ source: string; target: string }> {
  backlogSource ??= real.newStream('cli-backlog').then(async (stream) => {
    await publishAll(
      real.rabbit,
      stream,
      Array.from({ length: 600 }, (_, n) => jsonMessage({ n })),
    );
    return stream;
  });
  return { source: await backlogSource, target: await real.newStream('cli-backlog-out') };
}

describe('stream-windows in a terminal', () => {
  it('should print the status as a table with colours, and without them under NO_COLOR', async () => {
    const args = ['status', '--source', readings, '--target', results, '--producer', 'job'];
    const [coloured, plain] = await Promise.all([
      inTerminal(main, args),
      inTerminal(main, args, childEnv({ NO_COLOR: '1' })),
    ]);
    expect(coloured.code).toBe(0);
    expect(plain.code).toBe(0);
    const header =
      /SOURCE\s+TARGET\s+PRODUCER\s+LAST OFFSET\s+RESUME AT\s+SOURCE END\s+LAG\s+LAG TIME/;
    expect(coloured.stdout).toMatch(header);
    expect(coloured.stdout).toContain(`${ESC}1m`); // bold header
    expect(plain.stdout).toMatch(header);
    expect(plain.stdout).not.toContain(ESC);
    // The same table, once the colours are taken out.
    // eslint-disable-next-line no-control-regex
    expect(coloured.stdout.replace(/\x1b\[\d+m/g, '')).toBe(plain.stdout);
  });

  it('should print tail results as a table, one row per output', async () => {
    const run = await inTerminal(main, [
      'tail',
      '--target',
      results,
      '--from',
      '3',
      '--count',
      '1',
    ]);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\r\n').filter((line) => line !== '');
    expect(lines[0]).toMatch(
      new RegExp(
        `^${ESC.replace('[', '\\[')}1mOFFSET\\s+WINDOW START\\s+WINDOW END\\s+KEY\\s+COUNT\\s+VALUE`,
      ),
    );
    const third = expected[3] as ReadResult<number>;
    expect(lines.slice(1).map((line) => line.split(/\s+/))).toEqual(
      third.result.outputs.map((o) => [
        '3',
        new Date(o.start).toISOString(),
        new Date(o.end).toISOString(),
        String(o.key),
        String(o.count),
        String(o.value),
      ]),
    );
  });

  it('should draw the progress bar while a job catches up, and clear it at the end', async () => {
    const { source, target } = await backlog();
    const run = await inTerminal(progressChild, [url, source, target]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/catching up \[.*\] \d+% \d+\/600 ETA/);
    expect(run.stdout).toContain(`\r${ESC}2Kdone\r\n`);
  });
});
