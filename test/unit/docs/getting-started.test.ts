// docs/getting-started.md is run as written by test/integration/quick-start.test.ts, which
// takes its files and commands from the Markdown: this checks, without a broker, that every
// step is there to be run, in the order the guide promises.
import { describe, expect, it } from 'vitest';
import { extractBlocks, readDoc } from './doc-blocks.js';
import {
  parseGuide,
  readGuide,
  type GuideCommand,
} from '../../support/package/getting-started-guide.js';

const nodeFiles = (commands: readonly GuideCommand[]) =>
  commands.flatMap((c) => (c.kind === 'node' ? [c.file] : []));

describe('the getting-started guide', () => {
  it('marks every code block with the file it becomes, and runs each file', async () => {
    const { files, commands, unmarked } = await readGuide();
    expect(unmarked).toEqual([]);
    expect([...files.keys()]).toEqual([
      'try-it.mjs',
      'write-events.mjs',
      'run-job.mjs',
      'read-results.mjs',
      'first-job.ts',
    ]);
    expect(new Set(nodeFiles(commands))).toEqual(new Set(files.keys()));
  });

  it("runs the README's first job as its TypeScript file", async () => {
    const { files } = await readGuide();
    const [first] = extractBlocks('README.md', readDoc('README.md')).filter((b) => b.run);
    expect(files.get('first-job.ts')).toBe(first?.code);
  });

  it('installs, tries the embedded broker, starts RabbitMQ, writes events, runs the job and reads its results, in that order', async () => {
    const { commands } = await readGuide();
    const steps = commands.map((c) =>
      c.kind === 'node' ? c.file : c.kind === 'npm' ? `npm ${c.args.join(' ')}` : c.kind,
    );
    expect([...new Set(steps)]).toEqual([
      'folder',
      'npm init -y',
      // npm 11's `npm init -y` writes "type": "commonjs": a .ts file with a top-level await fails.
      'npm pkg set type=module',
      'install',
      'try-it.mjs',
      'broker',
      'write-events.mjs',
      'run-job.mjs',
      'read-results.mjs',
      'npm install --save-dev tsx',
      'first-job.ts',
    ]);
    for (const c of commands) {
      if (c.kind === 'node') expect(c.output, `what ${c.file} prints`).toBeDefined();
    }
  });

  it('parses a marked block missing as a file missing, and refuses what it cannot run', () => {
    const guide = parseGuide(
      ['```js', "console.log('hi');", '```', '```sh', 'node hi.mjs', '```'].join('\n'),
    );
    expect(guide.unmarked).toEqual(["console.log('hi');\n"]);
    expect(guide.files.size).toBe(0);
    expect(nodeFiles(guide.commands)).toEqual(['hi.mjs']);
    expect(() => parseGuide('```sh\nnpx tsx job.mjs\n```')).toThrow(
      'the guide runs a command no test carries out: npx tsx job.mjs',
    );
    expect(() => parseGuide('```sh\nmkdir app && cd elsewhere\n```')).toThrow(
      'the guide runs a command no test carries out: mkdir app && cd elsewhere',
    );
    expect(() => parseGuide('<!-- output -->\n\n```text\n1\n```')).toThrow(
      /^an output block follows no node command/,
    );
  });
});
