// The package as a user gets it: `npm pack` (which builds dist/ first), unpacked into a fresh
// project's node_modules, then used the ways users tried: required from a CommonJS TypeScript
// project, bundled with esbuild by the command the README gives, and read: the README's links
// into docs/ lead to pages the package holds. No registry is asked: the package's dependencies
// are linked from this repository's node_modules.
import { readFileSync } from 'node:fs';
import {
  copyFile,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bound } from '../support/timing.js';
import { brokenLinks, linksOf, markdownUnder, shippedMarkdown } from '../support/docs/doc-links.js';
import {
  packPackage,
  repository as root,
  repositoryModules as modules,
  run,
} from '../support/package/packed-package.js';

interface Manifest {
  readonly scripts?: Record<string, string>;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly exports: Record<string, unknown>;
  readonly typesVersions?: Record<string, Record<string, readonly string[]> | undefined>;
  readonly files: readonly string[];
}

/** The scripts npm runs when it installs a package (what it warns about as install scripts). */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

let folder: string;
/** The fresh project: `"type": "commonjs"`, the packed package in its node_modules. */
let app: string;
let packed: Manifest;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'packed-package-'));
  const tarball = await packPackage(folder);
  app = join(folder, 'app');
  const unpacked = join(app, 'node_modules', 'stream-windows');
  await mkdir(unpacked, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1']);
  packed = JSON.parse(await readFile(join(unpacked, 'package.json'), 'utf8')) as Manifest;
  // What an install would bring: the dependencies, the optional peer (for the metrics entry),
  // Node's types and esbuild (the user's own dev dependencies).
  const linked = [
    ...Object.keys(packed.dependencies ?? {}),
    ...Object.keys(packed.peerDependencies ?? {}),
    '@types/node',
    'esbuild',
  ];
  for (const name of linked) {
    await mkdir(join(app, 'node_modules', name, '..'), { recursive: true });
    await symlink(join(modules, name), join(app, 'node_modules', name));
  }
  await mkdir(join(app, 'node_modules', '.bin'));
  await symlink('../esbuild/bin/esbuild', join(app, 'node_modules', '.bin', 'esbuild'));
  await writeFile(
    join(app, 'package.json'),
    JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'commonjs' }),
  );
}, bound(300_000)); // npm pack builds the package first (tsc)

afterAll(async () => {
  // Unset when beforeAll failed before making it.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
});

/** A small job on the embedded broker: two messages, one count(2) result of their sum. */
const JOB = `
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('in');
  broker.createStream('out');
  broker.append('in', [jsonMessage({ n: 1 }), jsonMessage({ n: 2 })]);
  await aggregate<{ n: number }>(broker.source('in'))
    .count(2)
    .reduce((sum, e) => sum + e.n, 0)
    .to(broker.target('out', { producer: 'sums' }))
    .run({ untilCaughtUp: true });
  const sums = broker.messages('out').map((m) => decodeResult<number>(m.bytes).outputs[0]?.value);
`;

describe('the packed package', () => {
  it('should be built by packing and run no script when installed', async () => {
    const files = await readdir(join(app, 'node_modules', 'stream-windows', 'dist'));
    expect(files).toContain('index.js');
    expect(files).toContain('index.d.ts');
    const scripts = Object.keys(packed.scripts ?? {});
    expect(scripts.filter((name) => INSTALL_SCRIPTS.includes(name))).toEqual([]);
  });

  it("should ship every entry of package.json's files", async () => {
    const shipped = await readdir(join(app, 'node_modules', 'stream-windows'));
    expect(shipped).toEqual(expect.arrayContaining([...packed.files]));
  });

  it('should ship the docs: every link of its README, CHANGELOG, docs/ and api/ resolves inside the package', () => {
    const shipped = join(app, 'node_modules', 'stream-windows');
    const pages = shippedMarkdown(shipped, packed.files);
    expect(pages, 'every page of docs/ is shipped').toEqual(
      expect.arrayContaining(markdownUnder(root, 'docs')),
    );
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'CHANGELOG.md']));
    const read = (file: string) => readFileSync(join(shipped, file), 'utf8');
    const intoDocs = linksOf('README.md', read('README.md')).filter((l) =>
      l.target.startsWith('docs/'),
    );
    expect(intoDocs.length).toBeGreaterThan(20);
    expect(brokenLinks(shipped, pages, read)).toEqual([]);
  });

  it(
    'should type-check and run in a CommonJS TypeScript project, every entry point required',
    async () => {
      await writeFile(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'nodenext',
            target: 'es2022',
            strict: true,
            outDir: 'out',
            types: ['node'],
          },
          include: ['main.ts'],
        }),
      );
      await writeFile(
        join(app, 'main.ts'),
        `import { aggregate, decodeResult, jsonMessage } from 'stream-windows';
import { MemoryBroker } from 'stream-windows/memory';
import { connect } from 'stream-windows/rabbitmq';
import { jobMetrics } from 'stream-windows/metrics';
import { showProgress } from 'stream-windows/cli';

async function main(): Promise<void> {
  ${JOB}
  const entries = [connect, jobMetrics, showProgress].map((f) => typeof f);
  console.log(JSON.stringify({ sums, entries }));
}
void main();
`,
      );
      expect(Object.keys(packed.exports)).toHaveLength(7);
      await run(process.execPath, [join(modules, 'typescript', 'bin', 'tsc'), '-p', app]);
      const compiled = await readFile(join(app, 'out', 'main.js'), 'utf8');
      expect(compiled).toContain('require("stream-windows/memory")');
      const { stdout, stderr } = await run(process.execPath, [join(app, 'out', 'main.js')]);
      expect(stderr).toBe('');
      expect(JSON.parse(stdout)).toEqual({
        sums: [3],
        entries: ['function', 'function', 'function'],
      });
    },
    bound(180_000),
  ); // tsc over the package's declarations: 5 s alone, far more on a busy machine

  it(
    'should type-check every entry point in a "module": "commonjs" project, which resolves subpaths by typesVersions',
    async () => {
      // TypeScript's node10 resolution (what "module": "commonjs" implies) reads no exports map.
      const project = join(app, 'node10');
      await mkdir(project);
      await writeFile(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'commonjs',
            moduleResolution: 'node10',
            target: 'es2022',
            strict: true,
            noEmit: true,
            types: ['node'],
            // As `tsc --init` and this repository: @electric-sql/pglite's declarations need
            // @types/emscripten. The imports of main.ts are checked all the same.
            skipLibCheck: true,
          },
          include: ['main.ts'],
        }),
      );
      const specifiers = Object.keys(packed.exports).map((key) =>
        key === '.' ? 'stream-windows' : `stream-windows/${key.slice(2)}`,
      );
      expect(specifiers).toHaveLength(7);
      await writeFile(
        join(project, 'main.ts'),
        specifiers
          .map((specifier, i) => `import * as entry${String(i)} from '${specifier}';`)
          .join('\n') +
          `\nexport const entries = [${specifiers.map((_, i) => `entry${String(i)}`).join(', ')}];\n`,
      );
      // tsc reports on stdout, which execFile's error keeps out of its message.
      await run(process.execPath, [join(modules, 'typescript', 'bin', 'tsc'), '-p', project]).catch(
        (error: unknown) => {
          throw new Error(`tsc failed:\n${String((error as { stdout?: unknown }).stdout)}`);
        },
      );
      // Each subpath's types are those its export names.
      for (const [key, entry] of Object.entries(packed.exports)) {
        if (key === '.') continue;
        const types = (entry as { types: string }).types;
        expect(packed.typesVersions?.['*']?.[key.slice(2)]).toEqual([types]);
      }
    },
    bound(180_000),
  );

  it("should bundle with the bundling guide's esbuild command into one file that runs a job", async () => {
    // The script of a job on RabbitMQ: the adapter's entry point brings in the stock client.
    await writeFile(
      join(app, 'job.mjs'),
      `import { aggregate, decodeResult, jsonMessage } from 'stream-windows';
import { MemoryBroker } from 'stream-windows/memory';
import { connect } from 'stream-windows/rabbitmq';
${JOB.replace('<{ n: number }>', '').replace('<number>', '')}
console.log(JSON.stringify({ sums, connect: typeof connect }));
`,
    );
    // Offline: npx runs the project's esbuild and never fetches one.
    await run('sh', ['-c', await bundleCommand()], {
      cwd: app,
      env: { ...process.env, npm_config_offline: 'true' },
    });
    // Away from any node_modules: the bundle holds everything it runs.
    const away = join(folder, 'away');
    await mkdir(away);
    await copyFile(join(app, 'bundle.mjs'), join(away, 'bundle.mjs'));
    const { stdout, stderr } = await run(process.execPath, [join(away, 'bundle.mjs')]);
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toEqual({ sums: [3], connect: 'function' });
  });
});

/** The esbuild command of the guide "Installing and bundling", continuation lines joined. */
async function bundleCommand(): Promise<string> {
  const guide = await readFile(join(root, 'docs/guides/installing-and-bundling.md'), 'utf8');
  const command = /^npx esbuild (?:.*\\\n)*.*$/m.exec(guide)?.[0];
  expect(command, 'the guide gives an npx esbuild command').toBeDefined();
  return (command ?? '').replaceAll('\\\n', ' ');
}
