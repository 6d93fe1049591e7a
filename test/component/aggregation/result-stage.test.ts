import { describe, expect, it } from 'vitest';
import { aggregate, ProcessingError, type Aggregator } from '../../../src/index.js';
import {
  brokerWithReadings,
  reading,
  results,
  type Reading,
} from '../../support/jobs/memory-job.js';

const boom = new Error('no rate for this sum');

/** Sums values; its `result` throws for the sum 7. */
const picky: Aggregator<Reading, number, number> = {
  init: () => 0,
  add: (sum, r) => sum + r.value,
  result: (sum) => {
    if (sum === 7) throw boom;
    return sum;
  },
};

describe('an aggregate whose result() throws', () => {
  it('should stop with a ProcessingError naming stream, the step last offset and the result stage', async () => {
    const broker = brokerWithReadings([1, 2, 3, 4, 5, 6].map((v) => reading('a', v, v)));
    const running = aggregate<Reading>(broker.source('source'))
      .count(2)
      .aggregate(picky)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(ProcessingError);
    await expect(running).rejects.toMatchObject({
      stream: 'source',
      offset: 3n,
      stage: 'result',
      cause: boom,
      message: "result failed for message at offset 3 of stream 'source': no rate for this sum",
    });
    // The step before is published; nothing of the failing step or after it.
    expect(results(broker).map((r) => r.lastOffset)).toEqual([1n]);
  });

  it("should replace the key's output by a dead letter at the step's last offset under 'dead-letter'", async () => {
    const broker = brokerWithReadings([
      reading('a', 1, 1),
      reading('b', 3, 2),
      reading('b', 4, 3),
      reading('a', 2, 4),
      reading('b', 7, 5),
      reading('b', 0, 6),
    ]);
    const summary = await aggregate<Reading>(broker.source('source'))
      .count(4)
      .key((r) => r.sensor)
      .onError('dead-letter')
      .aggregate(picky)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    expect(summary.results).toBe(1);
    const [step, ...rest] = results(broker);
    expect(rest).toEqual([]);
    expect(step?.outputs.map((o) => [o.key, o.value])).toEqual([['a', 3]]);
    expect(step?.deadLetters).toEqual([
      {
        offset: 3n,
        stage: 'result',
        error: 'result failed for key "b" over 2 messages of offsets 0..3: no rate for this sum',
        message: new Uint8Array(0),
      },
    ]);
    expect(step?.deadLetterCount).toBe(1);
    expect(step?.messages).toBe(4);
  });

  it("should keep the job going after a dead-lettered result under 'dead-letter'", async () => {
    const broker = brokerWithReadings([1, 2, 3, 4, 5, 6].map((v) => reading('a', v, v)));
    await aggregate<Reading>(broker.source('source'))
      .count(2)
      .onError('dead-letter')
      .aggregate(picky)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    expect(
      results(broker).map((r) => [
        r.outputs.map((o) => o.value),
        r.deadLetters.map((d) => d.stage),
      ]),
    ).toEqual([
      [[3], []],
      [[], ['result']],
      [[11], []],
    ]);
  });
});
