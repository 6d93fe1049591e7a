// Reading a target stream back as steps, and checking the invariants every run must keep.
import { expect } from 'vitest';
import { decodeResult, type DecodedResult } from '../../../src/index.js';

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
  expectStepsTile(steps.map((parts) => parts[0] as DecodedResult));
  for (const parts of steps) {
    const head = parts[0] as DecodedResult;
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
  }
}

/**
 * Steps, each given by its first result (it carries the step's offsets and counts), tile the
 * source offsets from 0 to the last step's: each starts right after the one before and counts
 * the messages of its range, and its id (last offset) is not before its start, so ids strictly
 * increase and every message up to the last step is in exactly one. It holds for every kind
 * of window; {@link expectEveryMessageCountedOnce} adds, for step windows, that a step's
 * outputs, late messages and dead letters add up to its messages.
 */
export function expectStepsTile(heads: readonly DecodedResult[]): void {
  let next = 0n;
  for (const head of heads) {
    expect(head.firstOffset).toBe(next);
    expect(head.lastOffset).toBeGreaterThanOrEqual(head.firstOffset);
    expect(head.messages).toBe(Number(head.lastOffset - head.firstOffset + 1n));
    next = head.lastOffset + 1n;
  }
}

export function expectStrictlyIncreasing(ids: readonly bigint[]): void {
  for (let i = 1; i < ids.length; i++) {
    expect(ids[i] as bigint).toBeGreaterThan(ids[i - 1] as bigint);
  }
}
