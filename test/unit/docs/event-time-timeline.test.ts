import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  EXAMPLE_SECONDS,
  RULES,
  eventTimeTimelineSvg,
} from '../../../scripts/timeline/timeline-svg.js';
import { replayTumbling } from '../../../scripts/timeline/event-time-replay.js';
import { aggregate, decodeResult, jsonMessage } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';

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
    expect(svg).toContain('resume watermark = 2 s (max event time before R, ringed, − 2 s)');
  });
});

describe('the timeline example run by the library', () => {
  it('publishes the results, resume points and late message the picture draws', async () => {
    const broker = new MemoryBroker();
    broker.createStream('source');
    broker.createStream('target');
    broker.append(
      'source',
      EXAMPLE_SECONDS.map((seconds) => jsonMessage({ t: seconds * 1000 })),
    );
    const job = () =>
      aggregate<{ t: number }>(broker.source('source'))
        .eventTime((m) => m.t)
        .tumbling(RULES.size, { grace: RULES.grace })
        .maxOutOfOrderness(RULES.maxOutOfOrderness)
        .reduce((a) => a)
        .to(broker.target('target', { producer: 'timeline' }));
    await job().run({ untilCaughtUp: true });
    const drawn = replayTumbling(
      EXAMPLE_SECONDS.map((seconds) => seconds * 1000),
      RULES,
    );
    const published = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(
      published.map((r) => ({
        publishingId: Number(r.lastOffset),
        closed: r.outputs.map(({ start, end }) => ({ start, end })),
        watermark: r.recovery?.watermark,
        resumeOffset: Number(r.recovery?.offset),
        resumeWatermark: r.recovery?.offsetWatermark,
      })),
    ).toEqual(
      drawn.results.map((r) => ({
        publishingId: r.publishingId,
        closed: r.closed,
        watermark: r.watermark,
        resumeOffset: r.resumeOffset,
        resumeWatermark: (r.resumeMaxEventTime ?? -Infinity) - RULES.maxOutOfOrderness,
      })),
    );
    // The late message goes into the next result, which a later message (40 s) decides.
    const late = drawn.messages.filter((m) => m.late).map((m) => ({ t: m.eventTime }));
    expect(late).toHaveLength(1);
    broker.append('source', [jsonMessage({ t: 40_000 })]);
    await job().run({ untilCaughtUp: true });
    expect(broker.messages('target').map((m) => decodeResult(m.bytes).late)).toEqual([[], late]);
  });
});
