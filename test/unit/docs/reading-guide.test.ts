// The reading guide (docs/guides/reading-results.md) shows the example readers as they are:
// examples/readers/*.ts, which tsc checks and test/integration/interop-clients.test.ts runs
// against the real broker, so the guide's JavaScript cannot rot.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const GUIDE = 'docs/guides/reading-results.md';

/** Each code block the guide marks with the file it shows: `<!-- path -->`, then the block. */
function shownFiles(markdown: string): Map<string, string[]> {
  const shown = new Map<string, string[]>();
  const marked = /<!-- (examples\/readers\/[\w.-]+) -->\n\n```ts\n([\s\S]*?)```\n/g;
  for (const [, path, code] of markdown.matchAll(marked)) {
    shown.set(path as string, [...(shown.get(path as string) ?? []), code as string]);
  }
  return shown;
}

describe('the reading guide', () => {
  it('should show every example reader once, exactly as its file is', () => {
    const files = readdirSync(new URL('examples/readers/', root)).map(
      (f) => `examples/readers/${f}`,
    );
    const shown = shownFiles(read(GUIDE));
    expect([...shown.keys()].sort()).toEqual(files.sort());
    for (const file of files) expect(shown.get(file)).toEqual([read(file)]);
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  it('should notice a block that differs from its file', () => {
    const guide = read(GUIDE).replace("'application/msgpack-seq': //", "'application/x-other': //");
    const shown = shownFiles(guide);
    expect(shown.get('examples/readers/result-message.ts')).not.toEqual([
      read('examples/readers/result-message.ts'),
    ]);
  });

  it('should be linked from the README and from the Reading results section', () => {
    expect(read('README.md')).toContain(`](${GUIDE})`);
    const concept = read('docs/concepts/steps-and-results.md');
    const section = concept.slice(concept.indexOf('## Reading results'));
    expect(section).toContain('](../guides/reading-results.md)');
  });
});
