// The API report (api/) and the API reference (docs/reference/api/) are what `npm run
// api:update` writes from src/ today: a change to the public surface of an entry point is a diff
// to commit, seen in review. Every exported symbol, and every public member of the classes,
// interfaces and object types a user reaches, has a TSDoc summary; the builder has examples.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiPages, undocumented, undocumentedMembers } from '../../../scripts/api/api-pages.js';
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

  it('give every public member of those classes, interfaces and object types a one-line summary', () => {
    expect(undocumentedMembers(surfaces), 'add a TSDoc comment (/** … */) to each').toEqual([]);
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
      symbols: [{ ...BARE_SYMBOL }],
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

  it('name a member without a summary once; inherit the summary of the member it implements or overrides; leave out private members and type parameters', () => {
    const [main] = surfaces;
    if (main === undefined) throw new Error('no entry point');
    const member = { owner: 'X', name: 'y', source: 'src/x.ts', documentation: '' };
    const withMember = {
      entry: main.entry,
      symbols: [{ ...BARE_SYMBOL, members: [member] }],
      referenced: [],
    };
    expect(undocumentedMembers([withMember, withMember])).toEqual(['src/x.ts: X.y']);
    const members = surfaces.flatMap((s) => s.symbols.flatMap((symbol) => symbol.members));
    const named = (owner: string, name: string) =>
      members.find((m) => m.owner === owner && m.name === name);
    // MemorySource's endOffset has no comment of its own: Source.endOffset's is its summary.
    expect(named('MemorySource', 'endOffset')?.documentation).toBe(
      'Offset one past the last message a reader is currently delivered (0 for an empty stream).',
    );
    // ConfigError.code overrides StreamWindowsError.code, documented there.
    expect(named('ConfigError', 'code')?.documentation).toMatch(/^What went wrong/);
    expect(named('MemoryBroker', 'streams')).toBeUndefined(); // private
    expect(named('Runner', 'T')).toBeUndefined(); // a type parameter
    expect(named('RabbitMQ', 'open')).toBeDefined(); // static
    expect(named('ResultOutput', 'value')).toBeDefined(); // of an interface
  });
});

/** Files other work is rewriting now: their members get their summaries after it is merged. */
/** A symbol without documentation or members, for the checks' own tests. */
const BARE_SYMBOL = {
  name: 'x',
  declaration: 'declare const x: 1;',
  documentation: '',
  examples: [],
  members: [],
};
