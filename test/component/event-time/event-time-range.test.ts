import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  ProcessingError,
  tumbling,
  type WindowSpec,
} from '../../../src/index.js';
import type { EventTimeWindowSpec } from '../../../src/windows/event-time-spec.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { results } from '../../support/jobs/memory-job.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2024, 0, 1);

interface Timed {
  readonly k: string;
  readonly t: number;
}

/** Key `x` at `edge` first, then key `a` at T0 + 0, 8, 16, 24 days: the stream. */
function brokerWithEdgeFirst(edge: number): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  const messages = [
    { k: 'x', t: edge },
    ...[0, 8, 16, 24].map((d) => ({ k: 'a', t: T0 + d * DAY })),
  ];
  broker.append(
    'source',
    messages.map((m) => jsonMessage(m)),
  );
  return broker;
}

const job = (
  broker: MemoryBroker,
  window: WindowSpec | EventTimeWindowSpec,
  onError: 'stop' | 'dead-letter',
) =>
  aggregate<Timed>(broker.source('source'))
    .eventTime((v) => v.t)
    .key((v) => v.k)
    .window(window)
    .onError(onError)
    .reduce((n: number) => n + 1, 0)
    .to(broker.target('target', { producer: 'p' }))
    .run({ untilCaughtUp: true });

describe('an event time whose window cannot be represented', () => {
  it.each([8.64e15, -8.64e15])(
    'is dead-lettered at stage event-time, and the windows of every other key still close (%d)',
    async (edge) => {
      const broker = brokerWithEdgeFirst(edge);
      await job(broker, tumbling('1w', { grace: 0 }), 'dead-letter');
      const written = results(broker);
      expect(written.flatMap((r) => r.outputs.map((o) => [o.key, o.start, o.count]))).toEqual([
        ['a', T0, 1],
        ['a', T0 + 7 * DAY, 1],
        ['a', T0 + 14 * DAY, 1],
      ]);
      expect(written.flatMap((r) => r.deadLetters.map((d) => [d.offset, d.stage]))).toEqual([
        [0n, 'event-time'],
      ]);
      expect(written[0]?.deadLetters[0]?.error).toBe(
        `event time ${edge} has a window of tumbling(1w, tz=UTC, weekStartsOn=1, grace=0ms) ` +
          'that cannot be represented or closed: every window must lie within ±8640000000000000 ' +
          'ms (the range of Date), and end before 8640000000000000 − grace − maxOutOfOrderness = ' +
          '8640000000000000, so that the watermark can pass it',
      );
    },
  );

  it('is dead-lettered when its window ends where the watermark cannot pass it, and the job goes on (issue 27)', async () => {
    // The report: tumbling('1h', { grace: 0 }) took 8.64e15 - 1, whose window [8.64e15 - 1h,
    // 8.64e15) no event time could close; every later message was late, held, never published.
    const edge = 8.64e15 - 1;
    const broker = brokerWithEdgeFirst(edge);
    await job(broker, tumbling('1h', { grace: 0 }), 'dead-letter');
    const written = results(broker);
    expect(written.flatMap((r) => r.outputs.map((o) => [o.key, o.start, o.count]))).toEqual([
      ['a', T0, 1],
      ['a', T0 + 8 * DAY, 1],
      ['a', T0 + 16 * DAY, 1],
    ]);
    expect(written.flatMap((r) => [r.late.length, r.lateDropped])).toEqual([0, 0, 0, 0, 0, 0]);
    expect(written.flatMap((r) => r.deadLetters.map((d) => [r.source, d.offset, d.stage]))).toEqual(
      [['source', 0n, 'event-time']],
    );
    expect(written[0]?.deadLetters[0]?.error).toBe(
      `event time ${edge} has a window of tumbling(1h, grace=0ms) that cannot be represented or ` +
        'closed: every window must lie within ±8640000000000000 ms (the range of Date), and end ' +
        'before 8640000000000000 − grace − maxOutOfOrderness = 8640000000000000, so that the ' +
        'watermark can pass it',
    );
  });

  it("stops the job under 'stop', naming the stream, the offset and the cause", async () => {
    const broker = brokerWithEdgeFirst(8.64e15);
    const error = await job(broker, tumbling('1mo', { grace: 0 }), 'stop').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stream: 'source', offset: 0n, stage: 'event-time' });
    expect((error as ProcessingError).cause).toBeInstanceOf(RangeError);
    expect(results(broker)).toEqual([]);
  });

  it('is refused far from the edge too, where date-fns cannot place a calendar day of a zone', async () => {
    // Days from 18:55:28.836 in America/St_Johns: date-fns gives NaN for this one; UTC does not.
    const ago = -3.15e15; // about 100,000 years ago
    const stJohns = brokerWithEdgeFirst(ago);
    await job(
      stJohns,
      tumbling('1d', { grace: 0, timeZone: 'America/St_Johns', offset: 68_128_836 }),
      'dead-letter',
    );
    expect(results(stJohns).flatMap((r) => r.deadLetters.map((d) => d.stage))).toEqual([
      'event-time',
    ]);
    expect(results(stJohns).flatMap((r) => r.outputs.map((o) => o.key))).toEqual(['a', 'a', 'a']);
    const utc = brokerWithEdgeFirst(ago);
    await job(utc, tumbling('1d', { grace: 0, offset: 68_128_836 }), 'dead-letter');
    expect(results(utc).flatMap((r) => r.deadLetters)).toEqual([]);
  });

  it('is refused by a step window too, whose later windows then close as usual', async () => {
    const broker = brokerWithEdgeFirst(8.64e15 - 1);
    await job(broker, tumbling('1d', { offset: '1h' }), 'dead-letter');
    const written = results(broker);
    expect(written.map((r) => [r.windowStart, r.windowEnd])).toEqual([
      [T0 + 3_600_000 - DAY, T0 + 3_600_000],
      [T0 + 3_600_000 + 7 * DAY, T0 + 3_600_000 + 8 * DAY],
      [T0 + 3_600_000 + 15 * DAY, T0 + 3_600_000 + 16 * DAY],
    ]);
    expect(written[0]?.deadLetters.map((d) => d.stage)).toEqual(['event-time']);
  });
});
