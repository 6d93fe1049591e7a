import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * src/ is layered: a folder may import its own layer's siblings' files only when they are
 * below it, and never a folder above it. `common` holds what every layer shares (errors,
 * the Aggregator interface, key and output types, the stream protocol's numbers).
 */
const LAYER: Readonly<Record<string, number>> = {
  common: 0,
  codecs: 1,
  windows: 1,
  core: 2,
  memory: 3,
  rabbitmq: 3,
  // The database sink reads streams through core's ports and result format.
  sink: 3,
  // Over core's and the sink's events, with prom-client, which nothing else may import (an
  // optional peer).
  metrics: 4,
  // Database adapters of the sink, each over an optional peer nothing else may import.
  pglite: 4,
  postgres: 4,
  // The command line reads jobs through both the core and the RabbitMQ adapter, and a
  // database sink's checkpoints through the PostgreSQL adapter (imported only when asked).
  cli: 5,
};

const root = resolve(import.meta.dirname, '../../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

function folderOf(file: string): string {
  return relative(root, file).split('/')[0] ?? '';
}

describe('the layout of src/', () => {
  const imports = sourceFiles(root)
    .filter((file) => file.endsWith('.ts') && folderOf(file) in LAYER)
    .flatMap((file) =>
      // Static imports and dynamic ones (`import('../postgres/index.js')`) alike.
      [...readFileSync(file, 'utf8').matchAll(/(?:from |import\()'(\.[^']+)'/g)].map((match) => ({
        from: folderOf(file),
        to: folderOf(resolve(file, '..', match[1] ?? '')),
        file: relative(root, file),
      })),
    );

  it('finds the imports it checks', () => {
    expect(imports.filter((i) => i.from !== i.to).length).toBeGreaterThan(30);
  });

  it('has no folder importing a folder above it or beside it', () => {
    const wrong = imports.filter(
      (i) => i.from !== i.to && (LAYER[i.to] ?? 99) >= (LAYER[i.from] ?? -1),
    );
    expect(wrong).toEqual([]);
  });

  it('has prom-client imported from src/metrics only, as it is an optional peer dependency', () => {
    const importing = sourceFiles(root)
      .filter(
        (file) => file.endsWith('.ts') && /from 'prom-client'/.test(readFileSync(file, 'utf8')),
      )
      .map(folderOf);
    expect(importing).toContain('metrics');
    expect(importing.filter((folder) => folder !== 'metrics')).toEqual([]);
  });

  it('has pg imported from src/postgres only, and that adapter by the CLI only when asked', () => {
    const texts = sourceFiles(root)
      .filter((file) => file.endsWith('.ts'))
      .map((file) => ({ folder: folderOf(file), text: readFileSync(file, 'utf8') }));
    const pg = texts.filter(({ text }) => /from 'pg'/.test(text)).map(({ folder }) => folder);
    expect(pg).toContain('postgres');
    expect(pg.filter((folder) => folder !== 'postgres')).toEqual([]);
    // pg is an optional peer: a static import of the adapter would make the command need it.
    const adapter = imports.filter((i) => i.to === 'postgres' && i.from !== 'postgres');
    expect(adapter.map((i) => i.file)).toEqual(['cli/checkpoint-database.ts']);
    const cliTexts = texts.filter(({ folder }) => folder === 'cli').map(({ text }) => text);
    expect(cliTexts.filter((text) => /from '\.\.\/postgres\//.test(text))).toEqual([]);
  });
});
