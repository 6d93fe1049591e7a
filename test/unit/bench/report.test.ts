// The bench's targets (bench/report.ts): which rows each judges, and which way.
import { describe, expect, it } from 'vitest';
import { formatVerdicts, verdicts, type CaseResult } from '../../../bench/report.js';

function row(
  kind: CaseResult['kind'],
  name: string,
  ratios: Record<string, number>,
  values: Record<string, number> = {},
): CaseResult {
  return { kind, name, msgsPerSec: Number.NaN, ratios, values };
}

describe("the bench's targets", () => {
  it('hold the hot path to the floor at 100 keys and to RxJS at 10,000 keys only, and retire wall-clock partitions', () => {
    const results = [
      row('hot-path', 'tumbling-1m/100-keys', { floor: 0.9, rxjs: 1.5 }),
      row('hot-path', 'tumbling-1m/10000-keys', { floor: 0.8, rxjs: 4.6 }),
      row('hot-path', 'count/10000-keys', { floor: 0.4, rxjs: 5.1 }),
      row('partitions', 'partitions/2-vs-1/worker-threads', { onePartition: 1.49 }),
    ];

    expect(verdicts(results).map(({ name, target, pass }) => `${name}: ${target} ${pass}`)).toEqual(
      [
        'tumbling-1m/100-keys: floor >= 0.5 true',
        'tumbling-1m/10000-keys: rxjs >= 5 false',
        'count/10000-keys: rxjs >= 5 true',
      ],
    );
  });

  it('say so when none applies to the cases run (a run of the codecs alone)', () => {
    const results = [row('codec', 'source-decode/scanMessage', { stockClient: 17 })];
    expect(formatVerdicts(verdicts(results))).toBe('targets: none applies to the cases run');
  });

  it('of issue 22 judge the restart, the event-time state and speed at 100k keys, and the publishing share', () => {
    const results = [
      row('lookup', 'restart/100000-after', { 'distance-0': 0.7 }),
      row('lookup', 'restart/100000-after-default', { 'distance-0': 0.4 }),
      row('lookup', 'restart/10000-after-default', { 'distance-0': 0.1 }),
      row('event-time', 'event-time-state/tumbling/100000-open-keys', {}, { heapBytesPerKey: 173 }),
      row('event-time', 'event-time-state/session/100000-open-keys', {}, { heapBytesPerKey: 201 }),
      row('event-time', 'event-time-state/hopping/100000-open-keys', {}, { heapBytesPerKey: 330 }),
      row('event-time', 'event-time-state/hopping/1-open-keys', {}, { heapBytesPerKey: 9_000 }),
      row(
        'event-time',
        'event-time/hopping/100000-open-keys',
        { stepTumbling: 0.7 },
        { stepTumblingByCpu: 0.37 },
      ),
      row(
        'e2e',
        'tumbling-1s/100-keys/rabbitmq-results-discarded',
        {},
        { publishingShareOfTime: 0.08 },
      ),
    ];

    expect(verdicts(results).map(({ name, target, pass }) => `${name}: ${target} ${pass}`)).toEqual(
      [
        'tumbling-1s/100-keys/rabbitmq-results-discarded: publishingShareOfTime <= 0.1 true',
        'restart/100000-after: distance-0 >= 0.5 true',
        'restart/100000-after-default: distance-0 >= 0.5 false',
        'event-time-state/tumbling/100000-open-keys: heapBytesPerKey <= 200 true',
        'event-time-state/session/100000-open-keys: heapBytesPerKey <= 200 false',
        'event-time-state/hopping/100000-open-keys: heapBytesPerKey <= 500 true',
        'event-time/hopping/100000-open-keys: stepTumblingByCpu >= 0.6 false',
      ],
    );
  });
});
