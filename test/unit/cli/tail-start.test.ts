// Where `stream-windows tail --from last` starts, on the embedded broker: at the first part
// of the last result, whatever its packing.
import { describe, expect, it } from 'vitest';
import { aggregate, jsonMessage, readResults, type PackMode } from '../../../src/index.js';
import { tailStart } from '../../../src/cli/tail-start.js';
import { brokerWithReadings, reading, type Reading } from '../../support/jobs/memory-job.js';

/** Four one-minute windows of keys a, b, c (values 0..11): three results, the fourth open. */
const readings = Array.from({ length: 12 }, (_, i) => reading('abc'[i % 3] as string, i, 20 * i));

async function targetOf(pack: PackMode) {
  const broker = brokerWithReadings(readings);
  await aggregate<Reading>(broker.source('source'))
    .tumbling('1m')
    .key((r) => r.sensor)
    .reduce((total, r) => total + r.value, 0)
    .to(broker.target('target', { producer: 'job' }), { pack })
    .run({ untilCaughtUp: true });
  return broker;
}

describe('tailStart', () => {
  it("should start 'last' at the first part of the last result, in every packing", async () => {
    for (const [pack, expected] of [
      ['batch', 6n],
      ['sections', 2n],
      ['single', 2n],
    ] as const) {
      const broker = await targetOf(pack);
      const from = await tailStart(broker.source('target'), 'last');
      expect(from).toBe(expected);
      const read = [];
      for await (const item of readResults(broker.source('target'), {
        from,
        untilCaughtUp: true,
      })) {
        read.push(item.result.outputs.map((o) => o.value));
      }
      expect(read).toEqual([[6, 7, 8]]); // the third window's: the fourth is still open
    }
  });

  it("should start 'last' at the last message when it is not a result, and at 'first' on an empty stream", async () => {
    const broker = brokerWithReadings([]);
    expect(await tailStart(broker.source('target'), 'last')).toBe('first');
    broker.append('target', [jsonMessage({ own: 1 }), jsonMessage({ own: 2 })]);
    expect(await tailStart(broker.source('target'), 'last')).toBe(1n);
  });

  it('should pass every other start on to readResults as it is', async () => {
    const broker = brokerWithReadings([]);
    for (const from of ['first', 'next', 5n] as const) {
      expect(await tailStart(broker.source('target'), from)).toBe(from);
    }
  });
});
