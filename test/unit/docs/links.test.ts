// The link checker of README.md and docs/: every relative link and #anchor resolves, and no
// link leaves the repository.
import { describe, expect, it } from 'vitest';
import { ROOT, documentationFiles, readDoc } from './doc-blocks.js';
import { anchorsOf, brokenLinks, linksOf, slug } from '../../support/docs/doc-links.js';

const files = documentationFiles();

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
    // A root that leaves some paths out by design (the packed package) passes over links to them.
    const notHere = (path: string) => path === 'docs/missing.md';
    expect(brokenLinks(ROOT, ['docs/a.md'], read, notHere)).toEqual([
      'docs/a.md:4: #nowhere: docs/a.md has no heading #nowhere',
      'docs/a.md:4: https://example.com leads outside the repository',
      'docs/a.md:4: ../../x.md leads outside the repository',
    ]);
  });

  it("makes GitHub's anchors, numbering repeated headings", () => {
    expect(slug("Reading a producer's result back (recovery state)")).toBe(
      'reading-a-producers-result-back-recovery-state',
    );
    expect([...anchorsOf('# A\n## A\n<a id="versions"></a>')]).toEqual(['a', 'a-1', 'versions']);
  });
});
