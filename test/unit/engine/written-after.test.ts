// A restart's time bound (src/engine/resume/written-after.ts) is a question to the source (on
// RabbitMQ an end offset and a read, on connections of their own): asked only when the
// target's own hint did not answer, and at most once.
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import type { Source } from '../../../src/ports/ports.js';
import { readLastResult } from '../../../src/engine/resume/last-result.js';
import { writtenAfter } from '../../../src/engine/resume/written-after.js';
import { jsonMessage } from '../../../src/index.js';
import {
  othersResults,
  publishResults,
  resultMessages,
} from '../../support/results/stored-results.js';

/** An embedded source of 10 messages and a target holding our results 3 and 7 among others'. */
async function brokerWithResults() {
  const broker = new MemoryBroker({ now: () => 1_000 });
  broker.createStream('readings');
  broker.createStream('results');
  broker.append(
    'readings',
    Array.from({ length: 10 }, (_, i) => jsonMessage({ i })),
  );
  await publishResults(
    [
      { producer: 'ours', id: 3n },
      ...othersResults(['a', 'b'], 10, 0n),
      { producer: 'ours', id: 7n },
      ...othersResults(['a', 'b'], 10, 100n),
    ],
    (producer) => broker.target('results', { producer }),
  );
  const readings = broker.source('readings');
  let asked = 0;
  // Only what writtenAfter uses: the question, counted.
  const counting = {
    stream: 'readings',
    timestampAt: (offset: bigint) => {
      asked++;
      return readings.timestampAt(offset);
    },
  } as unknown as Source;
  return { target: broker.target('results', { producer: 'ours' }), counting, asked: () => asked };
}

describe("a restart's time bound", () => {
  it("is not asked of the source when the target's hint answers (the embedded target's latest write)", async () => {
    const { target, counting, asked } = await brokerWithResults();
    const found = await readLastResult(target, 7n, writtenAfter(counting, 7n));
    expect(found.kind).toBe('read');
    expect(asked()).toBe(0);
  });

  it('is asked of the source, once, when the hint does not answer', async () => {
    const { target, counting, asked } = await brokerWithResults();
    const where = writtenAfter(counting, 3n);
    expect(await target.readResult(3n, where)).toEqual(resultMessages('ours', 3n)[0]);
    expect(await target.readResult(2n, where)).toBeUndefined();
    expect(asked()).toBe(1);
  });
});
