// Reading a target stream back as steps, and checking the invariants every run must keep.
import { expect } from 'vitest';
import { decodeResult, type DecodedResult } from '../../src/index.js';

/** The results of a target stream grouped by step (a 'batch' step spans several messages). */
export function stepsOf(messages: readonly Uint8Array[]): DecodedResult[][] {
  const steps: DecodedResult[][] = [];
  for (const bytes of messages) {
    const result = decodeResult(bytes);
    const last = steps.at(-1);
    if (last !== undefined && last[0]?.lastOffset === result.lastOffset) last.push(result);
    else steps.push([result]);
  }
  return steps;
}

/**
 * Every source message before the end of the last step is counted in exactly one result:
 * steps tile the offsets from 0 without gap or overlap, and each step's message count is
 * the sum of what became of its messages (aggregated, late, dropped or dead-lettered).
 */
export function expectEveryMessageCountedOnce(steps: readonly DecodedResult[][]): void {
  let next = 0n;
  for (const parts of steps) {
    const head = parts[0] as DecodedResult;
    expect(head.firstOffset).toBe(next);
    expect(head.lastOffset).toBeGreaterThanOrEqual(head.firstOffset);
    expect(head.messages).toBe(Number(head.lastOffset - head.firstOffset + 1n));
    const outputs = parts.flatMap((p) => p.outputs);
    const late = parts.flatMap((p) => p.late);
    const dead = parts.flatMap((p) => p.deadLetters);
    expect(outputs.length).toBe(head.outputCount);
    expect(late.length).toBe(head.lateCount);
    expect(dead.length).toBe(head.deadLetterCount);
    const aggregated = outputs.reduce((n, o) => n + o.count, 0);
    expect(aggregated + late.length + head.lateDropped + head.filtered + dead.length).toBe(
      head.messages,
    );
    next = head.lastOffset + 1n;
  }
}

export function expectStrictlyIncreasing(ids: readonly bigint[]): void {
  for (let i = 1; i < ids.length; i++) {
    expect(ids[i] as bigint).toBeGreaterThan(ids[i - 1] as bigint);
  }
}
