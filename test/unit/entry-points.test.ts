import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as main from '../../src/index.js';
import * as memory from '../../src/memory/index.js';
import * as rabbitmq from '../../src/rabbitmq/index.js';
import * as metrics from '../../src/metrics/index.js';
import * as cli from '../../src/cli/index.js';
import * as pglite from '../../src/pglite/index.js';
import * as postgres from '../../src/postgres/index.js';
import * as commonErrors from '../../src/common/errors.js';

const root = resolve(import.meta.dirname, '../..');
const entryPoints: Readonly<Record<string, Record<string, unknown>>> = {
  'stream-windows': main,
  'stream-windows/memory': memory,
  'stream-windows/rabbitmq': rabbitmq,
  'stream-windows/metrics': metrics,
  'stream-windows/cli': cli,
  'stream-windows/pglite': pglite,
  'stream-windows/postgres': postgres,
};

function isErrorClass(value: unknown): value is abstract new (...args: never[]) => Error {
  return typeof value === 'function' && value.prototype instanceof Error;
}

function isLibraryError(value: unknown): boolean {
  return (
    value === main.StreamWindowsError ||
    (isErrorClass(value) && value.prototype instanceof main.StreamWindowsError)
  );
}

/** Where a user can import `name` from. */
function entriesExporting(name: string): string[] {
  return Object.entries(entryPoints)
    .filter(([, exports]) => name in exports)
    .map(([entry]) => entry);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

describe('the entry points', () => {
  // Every identifier ending in "Error" that the README and docs/ name, JavaScript's own excepted.
  const docs = [
    join(root, 'README.md'),
    ...sourceFiles(join(root, 'docs')).filter((f) => f.endsWith('.md')),
  ];
  const documented = [
    ...new Set(docs.flatMap((f) => readFileSync(f, 'utf8').match(/\b[A-Z]\w*Error\b/g) ?? [])),
  ].filter((name) => !(name in globalThis));

  it('should find the error classes the README documents', () => {
    expect(documented).toEqual(expect.arrayContaining(['RetentionGapError', 'ProcessingError']));
  });

  it.each(documented)(
    'should export %s, documented in the README, as a StreamWindowsError subclass',
    (name) => {
      const entries = entriesExporting(name);
      expect(entries, `${name} is exported from no entry point`).not.toEqual([]);
      for (const entry of entries) {
        expect(isLibraryError(entryPoints[entry]?.[name]), `${name} from '${entry}'`).toBe(true);
      }
    },
  );

  it("should export every shared error class (src/common/errors.ts) from 'stream-windows'", () => {
    const shared = Object.entries(commonErrors).filter(([, value]) => isErrorClass(value));
    expect(shared.length).toBeGreaterThan(5);
    for (const [name, value] of shared) {
      expect(
        Object.hasOwn(main, name) ? (main as Record<string, unknown>)[name] : undefined,
        name,
      ).toBe(value);
    }
  });

  it.each(['memory', 'rabbitmq'])(
    "should export every error class of src/%s from its own entry point or from 'stream-windows'",
    async (adapter) => {
      const entry = adapter === 'memory' ? memory : rabbitmq;
      const files = sourceFiles(join(root, 'src', adapter)).filter((file) => file.endsWith('.ts'));
      let classes = 0;
      for (const file of files) {
        const module = (await import(file)) as Record<string, unknown>;
        for (const [name, value] of Object.entries(module)) {
          if (!isLibraryError(value)) continue;
          classes++;
          const exported =
            (entry as Record<string, unknown>)[name] ?? (main as Record<string, unknown>)[name];
          expect(exported, `${name} of ${relative(root, file)}`).toBe(value);
        }
      }
      expect(classes).toBeGreaterThan(0);
    },
  );

  it('should keep SimulatedCrash outside StreamWindowsError, as the README says, so no policy catches it', () => {
    expect(isErrorClass(memory.SimulatedCrash)).toBe(true);
    expect(isLibraryError(memory.SimulatedCrash)).toBe(false);
  });
});
