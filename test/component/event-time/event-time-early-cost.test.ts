import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import { aggregate, jsonMessage } from '../../../src/index.js';
import { KeyedWindows } from '../../../src/windows/keyed-windows.js';
import { results } from '../../support/jobs/memory-job.js';

interface Click {
  readonly k: string;
  readonly t: number;
}

const OPEN_KEYS = 1_000;
const ROUNDS = 100;
const OUT_OF_ORDERNESS = 1_000_000;
const LATER = 10_000_000;

/**
 * 1,000 keys open a window each at LATER (kept open by the disorder allowed); then, ROUNDS
 * times, key `hot` opens a window before them and key `b` one after, whose time moves the
 * watermark past the `hot` one: one result per round, closing that window, while the 1,000
 * stay open and unchanged.
 */
function clicks(): Click[] {
  const all: Click[] = [];
  for (let i = 0; i < OPEN_KEYS; i++) all.push({ k: `k${i}`, t: LATER });
  for (let j = 0; j < ROUNDS; j++) {
    const hot = LATER - OUT_OF_ORDERNESS + 100 + 20 * j;
    all.push({ k: 'hot', t: hot }, { k: 'b', t: hot + 10 + OUT_OF_ORDERNESS });
  }
  return all;
}

describe("early updates 'each-result'", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('cost per changed window: a result updates the windows changed since the last one and visits none of the others', async () => {
    // Every walk over the open windows in creation order, counted window by window.
    let visited = 0;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called with .call on its instance
    const walk = KeyedWindows.prototype.openInCreationOrder;
    vi.spyOn(KeyedWindows.prototype, 'openInCreationOrder').mockImplementation(function* (
      this: KeyedWindows<unknown>,
    ) {
      for (const window of walk.call(this)) {
        visited++;
        yield window;
      }
    });
    const broker = new MemoryBroker();
    broker.createStream('source');
    broker.createStream('target');
    broker.append(
      'source',
      clicks().map((click) => jsonMessage(click)),
    );
    await aggregate<Click>(broker.source('source'))
      .eventTime((c) => c.t)
      .key((c) => c.k)
      .maxOutOfOrderness(OUT_OF_ORDERNESS)
      .tumbling(10, { grace: 0 })
      .emit({ early: 'each-result' })
      .aggregate({ init: () => 0, add: (n: number) => n + 1, result: (n) => n })
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });

    const published = results(broker);
    expect(published).toHaveLength(ROUNDS);
    published.forEach((result, round) => {
      const finals = result.outputs.filter((output) => output.final);
      const early = result.outputs.filter((output) => !output.final);
      expect(finals.map((output) => output.key)).toEqual(['hot']);
      // Changed since the last result: every k window and b's first at the first result, then
      // only b's newest window, although 1,000 and more are open.
      expect(early.map((output) => output.key)).toEqual(
        round === 0 ? [...Array.from({ length: OPEN_KEYS }, (_, i) => `k${i}`), 'b'] : ['b'],
      );
    });
    expect(visited).toBeLessThan(OPEN_KEYS);
  });
});
