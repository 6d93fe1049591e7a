// The package wiring of the command: what `npx stream-windows` and 'stream-windows/cli' run
// once tsc -p tsconfig.build.json (npm run build; npm pack runs it first) has built dist/.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
  bin: Record<string, string>;
  exports: Record<string, { import: string; types: string }>;
};

/** The source tsc compiles to `built` (tsconfig.build.json: rootDir src, outDir dist). */
function sourceOf(built: string): URL {
  expect(built).toMatch(/^\.\/dist\/.+\.js$/);
  return new URL(built.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'), root);
}

describe('the stream-windows command in the package', () => {
  it('should be a bin built from src/cli/main.ts, which starts with a node shebang tsc keeps', () => {
    const main = sourceOf(manifest.bin['stream-windows'] ?? '');
    expect(main.pathname.endsWith('/src/cli/main.ts')).toBe(true);
    expect(readFileSync(main, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it("should export 'stream-windows/cli' from src/cli/index.ts", () => {
    const entry = manifest.exports['./cli'];
    expect(entry?.types).toBe('./dist/cli/index.d.ts');
    const source = sourceOf(entry?.import ?? '');
    expect(existsSync(source)).toBe(true);
    expect(readFileSync(source, 'utf8')).toContain('export { showProgress');
  });
});
