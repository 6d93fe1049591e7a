// The "What a consumer sees of each packing" table (docs/concepts/steps-and-results.md) states
// what the real-client tests assert (test/support/clients/interop-contract.ts): it cannot drift
// from them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { INTEROP_TABLE_HEADER, interopTableRows } from '../../support/clients/interop-contract.js';

const README = readFileSync(
  new URL('../../../docs/concepts/steps-and-results.md', import.meta.url),
  'utf8',
);
const HEADING = '**What a consumer sees of each packing.**';

/** The cells of the first Markdown table after `heading`, header row first, rule row left out. */
function tableAfter(markdown: string, heading: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.startsWith(heading));
  if (start < 0) throw new Error(`README: no paragraph starting ${heading}`);
  const first = lines.findIndex((line, i) => i > start && line.startsWith('|'));
  const rows: string[][] = [];
  for (let i = first; i >= 0 && lines[i]?.startsWith('|') === true; i++) {
    const cells = (lines[i] as string)
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim());
    if (!cells.every((cell) => /^-+$/.test(cell))) rows.push(cells);
  }
  return rows;
}

describe("the README's interop table", () => {
  it('should have the header and one row per packing of the interop contract, cell for cell', () => {
    const [header, ...rows] = tableAfter(README, HEADING);
    expect(header).toEqual(INTEROP_TABLE_HEADER);
    expect(rows).toEqual(interopTableRows());
    expect(rows).toHaveLength(5);
  });

  it('should read a table cell for cell and notice a changed cell', () => {
    const markdown = `${HEADING} text\n\n| a | b |\n| - | - |\n| x | y |\n\nafter\n| not | this |`;
    expect(tableAfter(markdown, HEADING)).toEqual([
      ['a', 'b'],
      ['x', 'y'],
    ]);
    const changed = README.replace('no headers but `x-stream-offset`', 'every header');
    expect(tableAfter(changed, HEADING).slice(1)).not.toEqual(interopTableRows());
  });
});
