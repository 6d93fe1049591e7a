import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { eventTimeTimelineSvg } from '../../../scripts/timeline/timeline-svg.js';

const COMMITTED = new URL('../../../docs/event-time-timeline.svg', import.meta.url);

/** The names of the elements left open after reading `svg`'s tags in order, or the first misfit. */
function unbalancedTags(svg: string): string[] {
  const open: string[] = [];
  for (const [tag, closing, name, selfClosing] of svg.matchAll(
    /<(\/?)([a-zA-Z][\w-]*)\b[^>]*?(\/?)>/g,
  )) {
    if (selfClosing === '/') continue;
    if (closing === '') {
      open.push(name ?? '');
    } else if (open.pop() !== name) {
      return [`unexpected ${tag}`];
    }
  }
  return open;
}

describe('the event-time timeline picture (docs/event-time-timeline.svg)', () => {
  const svg = eventTimeTimelineSvg();

  it('is committed exactly as npm run docs:timeline writes it', () => {
    expect(readFileSync(COMMITTED, 'utf8')).toBe(svg);
  });

  it('is one svg element whose tags all balance', () => {
    expect(svg.startsWith('<svg ')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<text /g)?.length).toBeGreaterThan(20);
    expect(unbalancedTags(svg)).toEqual([]);
    expect(unbalancedTags('<svg><g></svg>')).toEqual(['unexpected </svg>']);
  });

  it('tells the story the README paragraph describes: a late message, result 8, resume at 3', () => {
    expect(svg).toContain('late: window [0,10) closed');
    expect(svg).toContain('result, publishing id D = 8');
    expect(svg).toContain('resume offset R = 3 = first offset of window [10,20)');
    expect(svg).toContain('resume watermark = max event time before R = 4 s');
  });
});
