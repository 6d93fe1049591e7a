// docs/getting-started.md, run as a new user runs it: from an empty folder, every command of
// the guide in its order, with the npm of the machine (the folder it makes, `npm init -y` and
// what it writes, the package installed by npm: the packed tarball in place of the
// registry's), then each file the guide has the reader write, taken from the Markdown, run
// with node or tsx, each printing what the guide says it prints. One step is replaced: instead
// of the docker commands that start a broker, the files connect to the project's broker
// through RABBITMQ_STREAM_URL, the variable they read (the guide's contributor note says so).
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readGuide, type GuideCommand } from '../support/package/getting-started-guide.js';
import { packPackage, run } from '../support/package/packed-package.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
/** The streams the guide names: fixed there, so the test clears them first. */
const STREAMS = ['readings', 'max-per-minute'];

let folder: string;
let tarball: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'quick-start-'));
  tarball = await packPackage(folder);
  for (const stream of STREAMS) await real.rabbit.deleteStream(real.track(stream));
}, bound(300_000)); // npm pack builds the package first (tsc)

afterAll(async () => {
  // Unset when beforeAll failed before making it.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
});

/** A user's shell: none of the variables `npm test` sets for its own scripts. */
function userEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')),
  );
  return { ...env, RABBITMQ_STREAM_URL: inject('rabbitmqUrl') };
}

interface Reading {
  readonly sensor: string;
  readonly celsius: number;
  readonly at: string;
}

/**
 * The lines read-results.mjs must print for `readings` as write-events.mjs confirmed them:
 * the highest reading per sensor per minute, sensors in the order they first came in their
 * minute, for every minute before the last reading's (whose window is still open).
 */
function expectedMaxima(readings: readonly Reading[]): string[] {
  const minuteOf = (r: Reading) => Math.floor(Date.parse(r.at) / 60_000) * 60_000;
  const open = Math.max(...readings.map(minuteOf));
  const maxima = new Map<number, Map<string, number>>();
  for (const r of readings) {
    const minute = minuteOf(r);
    if (minute === open) continue;
    const sensors = maxima.get(minute) ?? new Map<string, number>();
    sensors.set(r.sensor, Math.max(sensors.get(r.sensor) ?? -Infinity, r.celsius));
    maxima.set(minute, sensors);
  }
  return [...maxima]
    .sort(([a], [b]) => a - b)
    .flatMap(([minute, sensors]) =>
      [...sensors].map(
        ([sensor, max]) => `${new Date(minute).toISOString()} ${sensor}: max ${max}`,
      ),
    );
}

describe('the getting-started guide', () => {
  it(
    'runs as written from an empty folder, each step printing what the guide shows',
    async () => {
      const { files, commands } = await readGuide();
      // The empty folder the reader starts in; the guide's `mkdir && cd` makes the app's.
      const start = join(folder, 'start');
      await mkdir(start);
      let app = start;
      const env = userEnv();
      const written = new Set<string>();
      const printed = new Map<string, string[]>();
      const replaced: string[] = [];

      const carryOut = async (command: GuideCommand): Promise<void> => {
        switch (command.kind) {
          case 'folder':
            await mkdir(join(app, command.name));
            app = join(app, command.name);
            return;
          case 'npm':
            // As written; an install takes npm's cache when it has the package (the repository
            // installed it), else the registry.
            await run(
              'npm',
              command.args[0] === 'install'
                ? [...command.args, '--prefer-offline', '--no-audit', '--no-fund']
                : [...command.args],
              { cwd: app, env },
            );
            return;
          case 'install':
            // The registry's package is this tarball; its dependencies come from npm's cache
            // when it has them, else from the registry.
            await run('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], {
              cwd: app,
              env,
            });
            return;
          case 'broker':
            replaced.push(command.line);
            return;
          case 'node': {
            const code = files.get(command.file);
            expect(code, `the guide's block marked file: ${command.file}`).toBeDefined();
            if (!written.has(command.file)) await writeFile(join(app, command.file), code ?? '');
            written.add(command.file);
            const [program, args] =
              command.runner === 'node'
                ? [process.execPath, [command.file]]
                : ['npx', ['--no-install', 'tsx', command.file]];
            const { stdout, stderr } = await run(program, args, { cwd: app, env });
            expect(stderr, `${command.file} writes no errors`).toBe('');
            expect(stdout, `what ${command.file} prints`).toBe(command.output);
            printed.set(command.file, stdout.trimEnd().split('\n'));
          }
        }
      };
      for (const command of commands) await carryOut(command);

      expect(written).toEqual(new Set(files.keys()));
      expect(app, 'the guide makes its own folder').not.toBe(start);
      expect(replaced.every((line) => line.startsWith('docker '))).toBe(true);
      expect(replaced).not.toEqual([]);
      const installed = JSON.parse(
        await readFile(join(app, 'node_modules', 'stream-windows', 'package.json'), 'utf8'),
      ) as { name: string };
      expect(installed.name).toBe('stream-windows');

      // The job's results are what the events say.
      const readings = (printed.get('write-events.mjs') ?? []).map(
        (line) => JSON.parse(line.replace(/^confirmed #\d+ /, '')) as Reading,
      );
      expect(readings.length).toBeGreaterThan(2);
      expect(printed.get('read-results.mjs')).toEqual(expectedMaxima(readings));

      // "Run node write-events.mjs again and the stream still holds" every reading once.
      await run(process.execPath, ['write-events.mjs'], { cwd: app, env });
      expect(await readAll(real.rabbit, 'readings')).toHaveLength(readings.length);
    },
    bound(180_000),
  );
});
