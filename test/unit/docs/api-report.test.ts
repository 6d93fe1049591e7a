// The API report (api/) and the API reference (docs/reference/api/) are what `npm run
// api:update` writes from src/ today: a change to the public surface of an entry point is a diff
// to commit, seen in review. Every exported symbol has a TSDoc summary; the builder has examples.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiPages, undocumented } from '../../../scripts/api/api-pages.js';
import {
  ROOT,
  apiSurface,
  entryPoints,
  type EntrySurface,
} from '../../../scripts/api/api-surface.js';

const ACCEPT =
  'the public API changed: run `npm run api:update` and commit api/ and docs/reference/api/';

let surfaces: EntrySurface[];
let pages: Map<string, string>;
beforeAll(() => {
  surfaces = apiSurface();
  pages = apiPages(surfaces);
});

describe('the API report and the API reference', () => {
  it('cover every entry point of package.json, each exporting something', () => {
    expect(surfaces.map((s) => s.entry.source)).toEqual(entryPoints().map((e) => e.source));
    expect(surfaces.map((s) => s.entry.source)).toContain('src/memory/index.ts');
    for (const { entry, symbols } of surfaces)
      expect(symbols.length, entry.source).toBeGreaterThan(0);
  });

  it('are committed as generated from src/', () => {
    const committed = ['api', 'docs/reference/api'].flatMap((dir) =>
      readdirSync(join(ROOT, dir)).map((f) => `${dir}/${f}`),
    );
    expect(committed.sort(), ACCEPT).toEqual([...pages.keys()].sort());
    for (const [path, text] of pages) {
      // Generated against committed: the diff shows what the change adds (+) and removes (-).
      expect(text, `${path}: ${ACCEPT}`).toBe(readFileSync(join(ROOT, path), 'utf8'));
    }
  });

  it('give every exported symbol a one-line summary', () => {
    expect(undocumented(surfaces), 'add a TSDoc comment (/** … */) to each').toEqual([]);
  });

  it('show the builder with examples', () => {
    const main = surfaces.find((s) => s.entry.slug === 'stream-windows');
    const builder = ['aggregate', 'PipelineBuilder', 'AggregationBuilder', 'TransformBuilder'];
    const missing = builder.filter(
      (name) => (main?.symbols.find((s) => s.name === name)?.examples.length ?? 0) === 0,
    );
    expect(missing, 'add an @example to each').toEqual([]);
  });

  it('name a symbol without documentation; print overloads, no private member, and the types the exported ones name', () => {
    const [main] = surfaces;
    if (main === undefined) throw new Error('no entry point');
    const bare = {
      entry: main.entry,
      symbols: [{ name: 'x', declaration: 'declare const x: 1;', documentation: '', examples: [] }],
      referenced: [],
    };
    expect(undocumented([bare])).toEqual(['stream-windows: x']);
    const broker = surfaces.flatMap((s) => s.symbols).find((s) => s.name === 'MemoryBroker');
    expect(broker?.declaration).toContain('source(stream: string): MemorySource;');
    expect(broker?.declaration).toMatch(/source\(stream: string, options: \{/);
    expect(broker?.declaration).not.toContain('private');
    // MemoryBroker's public methods name types no entry point exports: the report shows them.
    const memory = surfaces.find((s) => s.entry.slug === 'memory');
    expect(memory?.referenced.length).toBeGreaterThan(0);
    const exportedNames = new Set(memory?.symbols.map((s) => s.name));
    for (const declaration of memory?.referenced ?? []) {
      const name = /(?:class|interface|type|function|const|enum) (\w+)/.exec(declaration)?.[1];
      expect(exportedNames.has(name ?? ''), declaration).toBe(false);
    }
  });
});
