// Both processors driven through the Processor interface the runner uses, with chunks
// directly: no runner, no broker.
import { describe, expect, it } from 'vitest';
import { lastWriteId } from '../../../src/result-format/publishing-id.js';
import { tumbling } from '../../../src/windows/tumbling.js';
import { count } from '../../../src/windows/count.js';
import { ProcessingError, RecoveryError } from '../../../src/common/errors.js';
import type { Processor } from '../../../src/engine/processor.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import { decodeResultHeader } from '../../../src/result-format/result-decoder.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { chunkOf, processorFor, sumOfValues, type Reading } from './readings-chunks.js';

const MINUTE = 60_000;
const at = (sensor: string, value: number, ms: number): Reading => ({ sensor, value, at: ms });

/** Outputs of the results taken, as [key, value, start] triples, in order. */
function outputsOf(processor: Processor<number>, idleFlushMayFollow = false): unknown[] {
  return processor
    .takeReady(idleFlushMayFollow)
    .map((result) => result.outputs.map((o) => [o.key, o.value, o.start]));
}

describe('the step processor through the Processor interface', () => {
  it('decides a step at the first message of a later window and flushes the open one', () => {
    const processor = processorFor(tumbling('1m'));
    processor.process(chunkOf(0n, [at('a', 1, 0), at('b', 2, 1_000), at('a', 3, 30_000)]));
    expect(processor.takeReady(false)).toEqual([]);
    expect(processor.canFlush).toBe(true);
    processor.process(chunkOf(3n, [at('a', 10, MINUTE + 1)]));
    const [result, ...rest] = processor.takeReady(true);
    expect(rest).toEqual([]);
    // The step ended before offset 3: its publishing id is 2, whatever an idle flush may do.
    expect(result?.lastOffset).toBe(2n);
    expect(result?.outputs.map((o) => [o.key, o.value])).toEqual([
      ['a', 4],
      ['b', 2],
    ]);
    processor.flush();
    const [flushed] = processor.takeReady(false);
    expect(flushed).toMatchObject({ firstOffset: 3n, lastOffset: 3n, flushed: true });
    expect(processor.canFlush).toBe(false);
  });

  it('says where a step job resumes: the last id + 1, or the first offset for 0', async () => {
    const start = {
      lastResult: undefined,
      hasPublished: () => Promise.resolve(true),
      recoveryError: (reason: string) => new RecoveryError('totals', 'job', 0n, reason),
      warn: () => undefined,
    };
    const processor = processorFor(count(2));
    expect(processor.readsLastResult).toBe(false);
    await expect(
      processor.resume({ ...start, last: 41n, lastId: lastWriteId(41n) }),
    ).resolves.toEqual({
      from: 42n,
      published: undefined,
      atOneAfterRetention: true,
    });
    await expect(processor.resume({ ...start, last: 0n, lastId: 0n })).resolves.toMatchObject({
      from: 'first',
    });
  });
});

describe('the window operator through the Processor interface', () => {
  const window = tumbling('1m', { grace: 0 });

  it('holds back a result decided at the last message read for an idle flush to join', () => {
    const processor = processorFor(window);
    // Offset 2 moves the watermark past the first minute: that window closes there, while the
    // second stays open.
    processor.process(chunkOf(0n, [at('a', 1, 0), at('a', 2, 1_000), at('a', 5, MINUTE + 1)]));
    expect(processor.takeReady(true)).toEqual([]);
    expect(processor.canFlush).toBe(true);
    processor.flush();
    // The runner takes what an idle flush decided at once.
    const [joined, ...rest] = processor.takeReady(false);
    expect(rest).toEqual([]);
    // One result under offset 2: the closed window, then the flushed one.
    expect(joined).toMatchObject({ lastOffset: 2n, flushed: true });
    expect(joined?.outputs.map((o) => [o.key, o.value, o.start])).toEqual([
      ['a', 3, 0],
      ['a', 5, MINUTE],
    ]);
  });

  it('hands the result over at once when no idle flush may follow', () => {
    const processor = processorFor(window);
    processor.process(chunkOf(0n, [at('a', 1, 0), at('a', 2, 1_000), at('a', 5, MINUTE + 1)]));
    expect(outputsOf(processor, false)).toEqual([[['a', 3, 0]]]);
    expect(processor.canFlush).toBe(false);
  });

  it('goes on from a recovery state: offsets up to the last id rebuild, publishing nothing', async () => {
    const first = processorFor(window);
    const chunk = chunkOf(0n, [
      at('a', 1, 0),
      at('a', 2, MINUTE + 1),
      at('a', 4, 2 * MINUTE + 1),
      at('a', 8, 2 * MINUTE + 2),
    ]);
    first.process(chunk);
    const results = first.takeReady(false);
    expect(results.map((result) => result.lastOffset)).toEqual([1n, 2n]);
    const published = results[1] as StepResult<number>;
    expect(published.recovery?.offset).toBe(2n); // the window of offset 2 is still open
    const metadata = { source: 'readings', producer: 'job', window: window.describe() };
    const header = decodeResultHeader(encodeResult(published, metadata, 'single')[0] as Uint8Array);
    const restarted = processorFor(window);
    expect(restarted.readsLastResult).toBe(true);
    const at1 = await restarted.resume({
      last: 2n,
      lastId: lastWriteId(2n),
      lastResult: { kind: 'read', header },
      hasPublished: () => Promise.resolve(true),
      recoveryError: (reason) => new RecoveryError('totals', 'job', 2n, reason),
      warn: () => undefined,
    });
    expect(at1).toEqual({ from: 2n, published: true, atOneAfterRetention: false });
    restarted.process(chunkOf(2n, [at('a', 4, 2 * MINUTE + 1), at('a', 8, 2 * MINUTE + 2)]));
    expect(restarted.takeReady(false)).toEqual([]);
    restarted.process(chunkOf(4n, [at('a', 16, 3 * MINUTE + 1)]));
    // The rebuilt window holds offsets 2 and 3, as the uninterrupted run's.
    expect(outputsOf(restarted)).toEqual([[['a', 12, 2 * MINUTE]]]);
  });
});

describe("a key's result that throws, under either processor", () => {
  const failing = {
    ...sumOfValues,
    result: (sum: number): number => {
      if (sum > 2) throw new RangeError('too big');
      return sum;
    },
  };
  const chunk = chunkOf(0n, [at('a', 1, 0), at('a', 2, 1_000), at('b', 1, MINUTE + 1)]);

  it('is one dead letter at the publishing id naming the key, its messages and its offsets', () => {
    const processor = processorFor(tumbling('1m'), { aggregator: failing, onError: 'dead-letter' });
    processor.process(chunk);
    const [result] = processor.takeReady(false);
    expect(result?.outputs).toEqual([]);
    expect(result?.deadLetters).toEqual([
      {
        offset: 1n,
        stage: 'result',
        error: 'result failed for key "a" over 2 messages of offsets 0..1: too big',
        message: new Uint8Array(0),
      },
    ]);
  });

  it('counts one message in the singular', () => {
    const processor = processorFor(tumbling('1m'), {
      aggregator: {
        ...failing,
        result: () => {
          throw new RangeError('too big');
        },
      },
      onError: 'dead-letter',
    });
    processor.process(chunkOf(0n, [at('a', 5, 0), at('b', 1, MINUTE + 1)]));
    const [result] = processor.takeReady(false);
    expect(result?.deadLetters.map((letter) => letter.error)).toEqual([
      'result failed for key "a" over 1 message of offsets 0..0: too big',
    ]);
  });

  it('is one dead letter naming the window for the window operator', () => {
    const window = tumbling('1m', { grace: 0 });
    const processor = processorFor(window, { aggregator: failing, onError: 'dead-letter' });
    processor.process(chunk);
    const [result] = processor.takeReady(false);
    expect(result?.deadLetters).toEqual([
      {
        offset: 2n,
        stage: 'result',
        error:
          'result failed for key "a" over 2 messages of window [0, 60000) from offset 0: too big',
        message: new Uint8Array(0),
      },
    ]);
  });

  it("stops the job at the result's publishing id under 'stop'", () => {
    for (const window of [tumbling('1m'), tumbling('1m', { grace: 0 })]) {
      const processor = processorFor(window, { aggregator: failing, onError: 'stop' });
      const stopped = (): void => processor.process(chunk);
      expect(stopped).toThrow(ProcessingError);
      const fresh = processorFor(window, { aggregator: failing, onError: 'stop' });
      expect(() => fresh.process(chunk)).toThrow(/result/);
    }
  });

  it('leaves no window to close twice after a result stopped the window operator: the next chunk is processed', () => {
    // The operator once kept the windows a throwing result had closed, and looped forever
    // closing them again at the next chunk (CI hung on this file for 26 minutes).
    const processor = processorFor(tumbling('1m', { grace: 0 }), {
      aggregator: failing,
      onError: 'stop',
    });
    expect(() => processor.process(chunk)).toThrow(ProcessingError);
    processor.process(chunkOf(3n, [at('c', 1, 3 * MINUTE), at('c', 1, 5 * MINUTE)]));
    const [result] = processor.takeReady(false);
    expect(result?.outputs.map((output) => output.key)).toEqual(['b']);
  });
});
