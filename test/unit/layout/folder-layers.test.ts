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
  // What the engine asks of a broker (Source, Target, the chunk shapes, a write's size).
  ports: 1,
  // What a database adapter provides (transactions of SQL), and the SQL helpers every user of
  // one shares: the sink and the outbox relay.
  database: 1,
  // The public wire contract of a target stream, read and written.
  'result-format': 2,
  // Public types a job is built and observed with (policies, run options, events).
  api: 2,
  // Writing input to a stream over a Target port.
  producer: 2,
  // The read-process-write loop and its two processors.
  engine: 3,
  // Broker adapters: each implements the ports, and never reaches into the engine.
  memory: 3,
  rabbitmq: 3,
  // The database sink reads streams through the ports and the result format.
  sink: 3,
  // The outbox: rows a service writes in its own transactions, relayed to a stream through
  // the ports, in commit order.
  outbox: 3,
  // One loop per partition of a super stream, in this thread or in worker threads.
  partitioning: 4,
  // Over the engine's and the sink's events, with prom-client, which nothing else may import
  // (an optional peer).
  metrics: 4,
  // Database adapters of the sink, each over an optional peer nothing else may import.
  pglite: 4,
  postgres: 4,
  // The builder chain users start from (`aggregate(...)`), over the engine and partitioning.
  dsl: 5,
  // The command line reads jobs through the engine and the RabbitMQ adapter, and a
  // database sink's checkpoints through the PostgreSQL adapter (imported only when asked).
  cli: 6,
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

  it('has every folder of src/ in a layer', () => {
    const folders = readdirSync(root, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !(folder in LAYER))).toEqual([]);
  });

  // A folder that grows past this is doing several things: split it by what each part owns.
  it('has no folder holding more than 15% of the lines of src/ in files directly inside it', () => {
    const lines = (file: string): number => readFileSync(file, 'utf8').split('\n').length;
    const files = sourceFiles(root).filter((file) => file.endsWith('.ts'));
    const total = files.reduce((sum, file) => sum + lines(file), 0);
    const perFolder = new Map<string, number>();
    for (const file of files) {
      const folder = relative(root, join(file, '..')) || '.';
      perFolder.set(folder, (perFolder.get(folder) ?? 0) + lines(file));
    }
    expect(total).toBeGreaterThan(10_000);
    const over = [...perFolder].filter(([, count]) => count > total * 0.15);
    expect(
      over.map(([folder, count]) => `${folder}: ${((100 * count) / total).toFixed(1)}%`),
    ).toEqual([]);
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
    expect(adapter.map((i) => i.file)).toEqual(['cli/status-database.ts']);
    const cliTexts = texts.filter(({ folder }) => folder === 'cli').map(({ text }) => text);
    expect(cliTexts.filter((text) => /from '\.\.\/postgres\//.test(text))).toEqual([]);
  });
});
