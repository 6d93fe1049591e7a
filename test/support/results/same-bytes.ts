import { expect } from 'vitest';

/**
 * Asserts that `actual` holds the messages of `expected`, byte for byte, in order; a failure
 * names the first message that differs and shows only it. vitest's `toEqual` walks a byte
 * array index by index: two lists of 67,660 results took it 34 s, and on a busy machine held
 * the worker's event loop past vitest's 60 s limit on its own task updates.
 */
export function expectSameMessages(
  actual: readonly Uint8Array[],
  expected: readonly Uint8Array[],
  what = 'messages',
): void {
  const common = Math.min(actual.length, expected.length);
  for (let i = 0; i < common; i++) {
    const got = actual[i] as Uint8Array;
    const want = expected[i] as Uint8Array;
    if (!Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(want)) {
      expect(Buffer.from(got), `${what}: message ${i} of ${expected.length} differs`).toEqual(
        Buffer.from(want),
      );
    }
  }
  expect(
    actual.slice(common).map((bytes) => Buffer.from(bytes)),
    `${what}: ${actual.length} messages where ${expected.length} were expected; past the common ones`,
  ).toEqual(expected.slice(common).map((bytes) => Buffer.from(bytes)));
}
