import { describe, expect, it } from 'vitest';
import { aggregate, ConfigError } from '../../../src/index.js';
import { SimulatedCrash, type MemoryBroker } from '../../../src/memory/index.js';
import {
  brokerWithReadings,
  reading,
  results,
  type Reading,
} from '../../support/jobs/memory-job.js';
import { targetBytes } from '../../support/arbitraries/memory-scenario.js';
import { expectSameMessages } from '../../support/results/same-bytes.js';

const readings = [1, 2, 3, 4, 5, 6].map((v) => reading(v % 2 === 0 ? 'even' : 'odd', v, v));

/** A reducer that mutates its accumulator in place, as users write them. */
const pushValue = (values: number[], r: Reading): number[] => {
  values.push(r.value);
  return values;
};

function job(broker: MemoryBroker, init: number[] | (() => number[])) {
  return aggregate<Reading>(broker.source('source'))
    .count(2)
    .reduce(pushValue, init)
    .to(broker.target('target', { producer: 'p' }));
}

describe('the initial value of reduce(fn, init)', () => {
  it('should give every step its own copy of a plain init, whatever the chunking', async () => {
    for (const chunkSize of [1, 3, 6]) {
      const broker = brokerWithReadings(readings, { chunkSize });
      await job(broker, []).run({ untilCaughtUp: true });
      expect(results(broker).map((r) => r.outputs.map((o) => o.value))).toEqual([
        [[1, 2]],
        [[3, 4]],
        [[5, 6]],
      ]);
    }
  });

  it('should make a mutating reducer publish the same bytes after a crash as without one', async () => {
    const uninterrupted = brokerWithReadings(readings);
    await job(uninterrupted, []).run({ untilCaughtUp: true });

    const crashed = brokerWithReadings(readings);
    const fault = crashed.injectFault({ stream: 'target', atPublish: 2, point: 'after-publish' });
    // One builder for both runs, as a process that restarts its job in place would keep it.
    const init: number[] = [];
    await expect(job(crashed, init).run({ untilCaughtUp: true })).rejects.toBeInstanceOf(
      SimulatedCrash,
    );
    expect(fault.fired).toBe(true);
    await job(crashed, init).run({ untilCaughtUp: true });

    expectSameMessages(targetBytes(crashed), targetBytes(uninterrupted));
    expect(targetBytes(crashed)).toHaveLength(3);
    expect(init).toEqual([]);
  });

  it('should give every key its own copy within a step', async () => {
    const broker = brokerWithReadings(readings);
    await aggregate<Reading>(broker.source('source'))
      .count(6)
      .key((r) => r.sensor)
      .reduce(pushValue, [])
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    expect(results(broker)[0]?.outputs.map((o) => [o.key, o.value])).toEqual([
      ['odd', [1, 3, 5]],
      ['even', [2, 4, 6]],
    ]);
  });

  it('should call a factory init once per key per step', async () => {
    const broker = brokerWithReadings(readings);
    let calls = 0;
    await job(broker, () => {
      calls++;
      return [];
    }).run({ untilCaughtUp: true });
    expect(calls).toBe(3);
    expect(results(broker).map((r) => r.outputs[0]?.value)).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
  });

  it('should reject at .reduce() an init that structuredClone cannot copy', () => {
    const source = brokerWithReadings([]).source('source');
    expect(() =>
      aggregate<Reading>(source)
        .count(2)
        .reduce((acc) => acc, { total: 0, format: (n: number) => String(n) }),
    ).toThrow(/^reduce init must be structured-cloneable, or a factory \(\) => init/);
  });

  it('should reject at .reduce() a class instance, which a clone would turn into a plain object', () => {
    class Totals {
      sum = 0;
      add(n: number): this {
        this.sum += n;
        return this;
      }
    }
    const source = brokerWithReadings([]).source('source');
    let error: unknown;
    try {
      aggregate<Reading>(source)
        .count(2)
        .reduce((acc, r) => acc.add(r.value), new Totals());
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ parameter: 'reduce init' });
  });
});
