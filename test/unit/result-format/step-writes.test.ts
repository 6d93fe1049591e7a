// A step too large for one write (encodeStep): each write fits the limit, each message holds at
// most one 'late' and one 'dead-letters' section (the wire format), and its messages decode
// back, together, to every output, late value and dead letter of the step, in order.
import { describe, expect, it } from 'vitest';
import { decodeResult, writeId, type DecodedResult } from '../../../src/index.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { encodeStep } from '../../../src/result-format/step-writes.js';
import { type PackMode } from '../../../src/result-format/result-format.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import { writeSize } from '../../../src/ports/write-size.js';
import { decodeMessage } from '../../../src/codecs/amqp-message.js';

const propertiesOf = (message: Uint8Array): Record<string, unknown> =>
  decodeMessage(message).applicationProperties ?? {};

const LIMIT = 1_000;
const metadata = { source: 'in', producer: 'p', window: 'count(10)' };

const step: StepResult<number> = {
  firstOffset: 0n,
  lastOffset: 99n,
  messages: 100,
  window: { start: 0, end: 60_000 },
  outputs: Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, count: 1, value: i })),
  // Small values: a cut of them is estimated above its size, so two pieces could share a write.
  late: Array.from({ length: 3_000 }, (_, i) => i % 100),
  lateDropped: 0,
  filtered: 0,
  deadLetters: Array.from({ length: 40 }, (_, i) => ({
    offset: BigInt(i),
    stage: 'key' as const,
    error: 'key must be a string or a finite number',
    message: new Uint8Array(100).fill(i),
  })),
};

describe('a step of several writes', () => {
  const packings: [PackMode, 'msgpack' | 'json'][] = [
    ['single', 'msgpack'],
    ['single', 'json'],
    ['sections', 'msgpack'],
  ];

  it.each(packings)("in '%s' (%s) fits each write and reads back whole", (pack, format) => {
    const writes = encodeStep(step, metadata, pack, format, LIMIT, 7n);
    expect(writes.length).toBeGreaterThan(1);
    const decoded: DecodedResult<number>[] = [];
    for (const [index, messages] of writes.entries()) {
      expect(writeSize(messages)).toBeLessThanOrEqual(LIMIT);
      expect(messages).toHaveLength(1);
      const message = decodeResult<number>(messages[0] as Uint8Array);
      expect(message.part).toEqual({ index, of: writes.length });
      expect(message.previous).toBe(7n);
      decoded.push(message);
    }
    // sw-holds names each section type once: no message holds two of a kind.
    for (const message of writes.flat()) {
      const types = String(propertiesOf(message)['sw-holds']).split(',');
      expect(new Set(types).size).toBe(types.length);
    }
    expect(decoded.flatMap((m) => m.outputs.map((o) => o.value))).toEqual(
      step.outputs.map((o) => o.value),
    );
    expect(decoded.flatMap((m) => m.late)).toEqual(step.late);
    expect(decoded.flatMap((m) => m.deadLetters.map((d) => d.offset))).toEqual(
      step.deadLetters.map((d) => d.offset),
    );
  });

  it("in 'batch' cuts late values and dead letters into parts that fit, numbered across writes", () => {
    const writes = encodeStep(step, metadata, 'batch', 'msgpack', LIMIT, 7n);
    expect(writes.length).toBeGreaterThan(1);
    const messages = writes.flat();
    for (const write of writes) expect(writeSize(write)).toBeLessThanOrEqual(LIMIT);
    const decoded = messages.map((message) => decodeResult<number>(message));
    expect(decoded.map((m) => m.part)).toEqual(
      decoded.map((_, index) => ({ index, of: messages.length })),
    );
    expect(decoded.flatMap((m) => m.late)).toEqual(step.late);
    expect(decoded.flatMap((m) => m.deadLetters.map((d) => d.offset))).toEqual(
      step.deadLetters.map((d) => d.offset),
    );
  });

  it("numbers each write's id by its place, the last one the step's last write", () => {
    const writes = encodeStep(step, metadata, 'sections', 'msgpack', LIMIT, 0n);
    const ids = writes.map((messages) => propertiesOf(messages[0] as Uint8Array)['sw-write-id']);
    expect(ids).toEqual(writes.map((_, w) => String(writeId(99n, w, writes.length))));
  });

  // 'single' msgpack is written once and given up as soon as it passes the limit: the step
  // must still take one write exactly when its one message fits, as in the other packings.
  it.each([...packings, ['batch', 'msgpack'] as const])(
    "in '%s' (%s) takes one write exactly when the whole step's messages fit",
    (pack, format) => {
      const whole = encodeResult(step, metadata, pack, format);
      const limit = writeSize(whole);
      expect(encodeStep(step, metadata, pack, format, limit, 7n)).toEqual([whole]);
      expect(encodeStep(step, metadata, pack, format, limit - 1, 7n).length).toBeGreaterThan(1);
    },
  );
});
