// The link checker of README.md and docs/: every relative link and #anchor resolves, and no
// link leaves the repository.
import { describe, expect, it } from 'vitest';
import { ROOT, documentationFiles, readDoc } from './doc-blocks.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  anchorsOf,
  brokenLinks,
  linksOf,
  shippedBy,
  shippedMarkdown,
  slug,
} from '../../support/docs/doc-links.js';

const files = documentationFiles();
/** What the package ships: package.json's `files`. */
const packageFiles = (JSON.parse(readDoc('package.json')) as { files: string[] }).files;

describe('the links of the README and docs/', () => {
  it('all resolve: files exist, anchors are headings of their file, none leaves the repository', () => {
    const links = files.flatMap((f) => linksOf(f, readDoc(f)));
    expect(links.length).toBeGreaterThan(100);
    expect(links.filter((l) => l.target.includes('#')).length).toBeGreaterThan(50);
    expect(brokenLinks(ROOT, files, readDoc)).toEqual([]);
  });

  it('reports a missing file, a missing anchor and a link outside the repository', () => {
    const texts: Record<string, string> = {
      'docs/a.md': [
        '# A',
        '## Two words: `code` (here)',
        '[ok](#two-words-code-here) [ok](../README.md#install)',
        '[gone](missing.md) [no anchor](#nowhere) [out](https://example.com) [up](../../x.md)',
        '`[in code](nowhere.md)`',
      ].join('\n'),
    };
    const read = (f: string) => texts[f] ?? readDoc(f);
    expect(brokenLinks(ROOT, ['docs/a.md'], read)).toEqual([
      'docs/a.md:4: missing.md: no file docs/missing.md',
      'docs/a.md:4: #nowhere: docs/a.md has no heading #nowhere',
      'docs/a.md:4: https://example.com leads outside the repository',
      'docs/a.md:4: ../../x.md leads outside the repository',
    ]);
  });

  it('of the pages the package ships lead only to files it ships (read in node_modules)', () => {
    const pages = shippedMarkdown(ROOT, packageFiles);
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'CHANGELOG.md', 'docs/README.md']));
    expect(pages.some((p) => p.startsWith('api/'))).toBe(true);
    expect(brokenLinks(ROOT, pages, readDoc, shippedBy(packageFiles))).toEqual([]);
  });

  it('reports a link of a shipped page to a file the package leaves out', () => {
    const texts: Record<string, string> = {
      'docs/a.md': '[c](../CONTRIBUTING.md#development) [b](../bench/README.md) [ok](../LICENSE)',
    };
    const read = (f: string) => texts[f] ?? readDoc(f);
    expect(brokenLinks(ROOT, ['docs/a.md'], read, shippedBy(packageFiles))).toEqual([
      'docs/a.md:1: ../CONTRIBUTING.md#development: CONTRIBUTING.md is not shipped in the package',
      'docs/a.md:1: ../bench/README.md: bench/README.md is not shipped in the package',
    ]);
  });

  it('name test files that exist (a code span, not a link: a moved test leaves it stale)', () => {
    const named = files.flatMap((f) =>
      [...readDoc(f).matchAll(/`(test\/[\w./-]+\.ts)`/g)].map((m) => ({ f, path: m[1] as string })),
    );
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter(({ path }) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it("makes GitHub's anchors, numbering repeated headings", () => {
    expect(slug("Reading a producer's result back (recovery state)")).toBe(
      'reading-a-producers-result-back-recovery-state',
    );
    expect([...anchorsOf('# A\n## A\n<a id="versions"></a>')]).toEqual(['a', 'a-1', 'versions']);
  });
});
