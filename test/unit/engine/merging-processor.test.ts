// The processor of a job over several inputs (src/engine/merge/merging-processor.ts), driven
// by hand: no runner, no broker. A restart re-releases what was published from its record; an
// input found silent before that is done is left out only after it, so that no floor decided
// meanwhile moves an item that was published.
import { describe, expect, it } from 'vitest';
import { RecoveryError } from '../../../src/common/errors.js';
import { lastWriteId } from '../../../src/result-format/publishing-id.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { decodeResultHeader } from '../../../src/result-format/result-decoder.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import type { Processor } from '../../../src/engine/processor.js';
import { tumbling } from '../../../src/windows/tumbling.js';
import { chunkOf, processorFor, type Reading } from './readings-chunks.js';

const window = tumbling(1_000, { grace: 0 });
const merged = () => processorFor(window, { inputs: ['a', 'b'] });
const at = (ms: number): Reading => ({ sensor: 's', value: 1, at: ms });
const A = 0;
const B = 1;

/** What a processor's results published: each one's last offset and window starts with counts. */
function taken(processor: Processor<number>): [bigint, [number | undefined, number][]][] {
  return processor
    .takeReady(false)
    .map((result) => [result.lastOffset, result.outputs.map((o) => [o.start, o.count])]);
}

describe('the merging processor', () => {
  it('leaves an input found silent while re-releasing what was published out only after it', async () => {
    // The run before the restart: b said nothing, was left out, and [0, 1s) was published.
    const first = merged();
    first.process(chunkOf(0n, [at(0), at(500), at(1_500), at(2_500)]), A);
    first.leaveOut?.(B);
    const [published] = first.takeReady(false) as [StepResult<number>];
    expect(published.lastOffset).toBe(2n);
    const metadata = { source: 'merge(a,b)', producer: 'job', window: window.describe() };
    const header = decodeResultHeader(encodeResult(published, metadata, 'single')[0] as Uint8Array);

    const restarted = merged();
    const resumed = await restarted.resume({
      last: 2n,
      lastId: lastWriteId(2n),
      lastResult: { kind: 'read', header },
      hasPublished: () => Promise.resolve(true),
      recoveryError: (reason) => new RecoveryError('totals', 'job', 2n, reason),
      warn: () => undefined,
    });
    // a from its 1.5 s (the window still open), b from its start, merged no earlier than 2.5 s.
    expect(resumed).toMatchObject({ from: 2n, inputs: [2n, 0n] });
    // a is slow to come again: found silent first. Left out now, b's messages, merged from
    // 2.5 s, would be released where a's 1.5 s was published.
    restarted.leaveOut?.(A);
    restarted.process(chunkOf(0n, [at(1_200), at(2_700), at(3_100)]), B);
    restarted.process(chunkOf(2n, [at(1_500), at(2_500)]), A);
    expect(taken(restarted)).toEqual([]);
    // a silent again, after its re-read: [1s, 2s) closes at its 2.5 s, as in a run without
    // the restart (b's 1.2 s late: [1s, 2s) closed at 2.5 s, where b was merged).
    restarted.leaveOut?.(A);
    first.process(chunkOf(0n, [at(1_200), at(2_700), at(3_100)]), B);
    first.leaveOut?.(A);
    expect(taken(restarted)).toEqual([[3n, [[1_000, 1]]]]);
    expect(taken(first)).toEqual([[3n, [[1_000, 1]]]]);
  });
});
