// Rule 6 of src/engine/resume/resume-point.ts: where a step job that flushes resumes, which
// window of its last result it reopens, and when a missing or unreadable result is worth a
// warning. Against the last result as a restart finds it: no processor, no broker.
import { describe, expect, it, vi } from 'vitest';
import { resumeAfterFlush } from '../../../src/engine/resume/after-flush.js';
import type { LastResult } from '../../../src/engine/resume/last-result.js';
import type { ResumeStart } from '../../../src/engine/resume/resume-point.js';
import { RecoveryError } from '../../../src/common/errors.js';
import { decodeResultHeader } from '../../../src/result-format/result-decoder.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import type { StepResult } from '../../../src/result-format/step-result.js';

const WINDOW = 'tumbling(1m)';

/** The last result, read, of a step at offset 4 (`overrides`: a flush, its window). */
function read(overrides: Partial<StepResult<number>>, window = WINDOW): LastResult {
  const result: StepResult<number> = {
    firstOffset: 0n,
    lastOffset: 4n,
    messages: 5,
    window: { start: 60_000, end: 120_000 },
    outputs: [],
    late: [],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [],
    ...overrides,
  };
  const [bytes] = encodeResult(result, { source: 'readings', producer: 'job', window }, 'single');
  return { kind: 'read', header: decodeResultHeader(bytes as Uint8Array) };
}

/** Resumes at `lastId` (offset 4 when above 0) with the target's scan answering `published`. */
async function resumeWith(lastId: bigint, result: LastResult | undefined, published = true) {
  const hasPublished = vi.fn(() => Promise.resolve(published));
  const warn = vi.fn();
  const start: ResumeStart = {
    last: lastId === 0n ? 0n : 4n,
    lastId,
    lastResult: undefined,
    hasPublished,
    recoveryError: (reason) => new RecoveryError('totals', 'job', lastId, reason),
    warn,
  };
  const reopen = vi.fn();
  const at = await resumeAfterFlush(start, result, WINDOW, reopen);
  return { at, reopen, warn, hasPublished };
}

describe('a step job that flushes, at a restart', () => {
  it('reopens the window its last result flushed, and only that one', async () => {
    const flushed = await resumeWith(4n, read({ flushed: true }));
    expect(flushed.reopen).toHaveBeenCalledWith({ start: 60_000, end: 120_000 });
    expect(flushed.at).toEqual({ from: 5n, published: true, atOneAfterRetention: true });

    // A result no flush wrote, one of another window, one without bounds (every message
    // dead-lettered): nothing goes on.
    for (const result of [
      read({}),
      read({ flushed: true }, 'tumbling(5m)'),
      read({ flushed: true, window: null }),
    ]) {
      const { reopen, warn } = await resumeWith(4n, result);
      expect(reopen).not.toHaveBeenCalled();
      expect(warn).not.toHaveBeenCalled();
    }
  });

  it('warns when its last result is missing or unreadable, and goes on after it', async () => {
    const unreadable = await resumeWith(4n, { kind: 'unreadable', reason: 'bad magic' });
    expect(unreadable.warn).toHaveBeenCalledWith(
      expect.stringContaining("the producer's last result cannot be read (bad magic)"),
    );
    const missing = await resumeWith(4n, { kind: 'missing' });
    expect(missing.warn).toHaveBeenCalledWith(
      expect.stringContaining("the producer's last result is not in the target"),
    );
    for (const { at, reopen } of [unreadable, missing]) {
      expect(at).toEqual({ from: 5n, published: true, atOneAfterRetention: true });
      expect(reopen).not.toHaveBeenCalled();
    }
  });

  it('says nothing of a missing result when the producer never published under an id', async () => {
    const { at, warn } = await resumeWith(0n, { kind: 'missing' }, false);
    expect(warn).not.toHaveBeenCalled();
    expect(at).toEqual({ from: 'first', published: false, atOneAfterRetention: true });
  });

  it('resumes at 1 after a result under id 0 without scanning the target', async () => {
    for (const result of [read({ flushed: true, lastOffset: 0n }), read({ lastOffset: 0n })]) {
      const { at, hasPublished } = await resumeWith(0n, result, false);
      expect(at).toEqual({ from: 1n, published: true, atOneAfterRetention: true });
      expect(hasPublished).not.toHaveBeenCalled();
    }
    // No result read under id 0: the scan answers.
    const scanned = await resumeWith(0n, undefined, true);
    expect(scanned.at).toMatchObject({ from: 1n, published: true });
    expect(scanned.hasPublished).toHaveBeenCalledOnce();
  });
});
