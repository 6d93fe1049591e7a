// Every ```ts block of README.md and docs/ is compiled against the public entry points, and
// the ones marked <!-- run --> run on the embedded broker: examples cannot rot unnoticed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import {
  ROOT,
  compileBlocks,
  documentationFiles,
  expectedOutput,
  extractBlocks,
  readDoc,
  runnableSource,
  type DocBlock,
} from './doc-blocks.js';
import { bound } from '../../support/timing.js';

const blocks = documentationFiles().flatMap((file) => extractBlocks(file, readDoc(file)));
const runnable = blocks.filter((b) => b.run);

describe('the TypeScript blocks of the README and docs/', () => {
  it('finds the blocks, programs and fragments, and at least one to run', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(20);
    expect(blocks.filter((b) => b.kind === 'program').length).toBeGreaterThanOrEqual(3);
    expect(runnable.filter((b) => b.where.startsWith('README.md:')).length).toBe(1);
    expect(runnable.length).toBeGreaterThanOrEqual(2);
  });

  it(
    'type-checks every block against the public entry points',
    () => {
      expect(compileBlocks(blocks)).toEqual([]);
    },
    bound(180_000),
  );

  it('shows each file a block is marked with exactly as the file is', () => {
    const shown = blocks.filter((b) => b.kind === 'shown');
    expect(shown.length).toBeGreaterThanOrEqual(5);
    for (const block of shown) expect(block.code, block.where).toBe(readDoc(block.shows ?? ''));
  });

  it(
    'fails on a broken example: a wrong option, an unknown import, a call in the wrong stage or order',
    () => {
      const broken: DocBlock[] = [
        {
          where: 'broken.md:1',
          kind: 'program',
          run: false,
          code: "import { aggregate } from 'stream-windows';\nimport { MemoryBroker } from 'stream-windows/memory';\nconst b = new MemoryBroker();\naggregate(b.source('s')).count(2).reduce((n: number) => n + 1, 0).to(b.target('t', { producer: 'p' }), { maxInFlite: 3 });\n",
        },
        {
          where: 'broken.md:2',
          kind: 'program',
          run: false,
          code: "import { aggregat } from 'stream-windows';\naggregat;\n",
        },
        {
          where: 'broken.md:3',
          kind: 'fragment',
          run: false,
          code: "aggregate<Reading>(src).count(3).reduce(sum, 0).onError('dead-letter');\n",
        },
        {
          where: 'broken.md:4',
          kind: 'fragment',
          run: false,
          code: 'aggregate<Reading>(src).eventTime((r) => r.t).map((r) => r.value);\n',
        },
      ];
      const found = compileBlocks(broken);
      expect(found.map((d) => d.where.split(' ')[0])).toEqual([
        'broken.md:1',
        'broken.md:2',
        'broken.md:3',
        'broken.md:4',
      ]);
      expect(found[0]?.message).toMatch(/maxInFlite/);
      expect(found[2]?.message).toMatch(/onError/);
      expect(found[3]?.message).toMatch(/EventTimeOrKeySet/);
    },
    bound(180_000),
  );

  it.each(runnable.map((b) => [b.where, b] as const))(
    'runs the program at %s on the embedded broker; it prints what its closing comment says',
    async (_, block) => {
      const dir = mkdtempSync(join(ROOT, 'test', 'unit', 'docs', '.run-'));
      const printed: string[] = [];
      const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
        printed.push(args.map(String).join(' '));
      });
      try {
        const file = join(dir, 'program.ts');
        writeFileSync(file, runnableSource(block.code, dir));
        await import(pathToFileURL(file).href);
      } finally {
        log.mockRestore();
        rmSync(dir, { recursive: true, force: true });
      }
      const expected = expectedOutput(block.code);
      expect(
        expected.length,
        'a run block ends with what it prints, as // comments',
      ).toBeGreaterThan(0);
      expect(printed).toEqual(expected);
    },
    bound(60_000),
  );
});
