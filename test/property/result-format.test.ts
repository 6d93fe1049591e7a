// The result wire format: every step result reads back as it was written, in both packing
// modes, and anything else is refused with a CodecError, never another exception.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCanonical } from '../../src/codecs/canonical-msgpack.js';
import { encodeMessage } from '../../src/codecs/amqp-message.js';
import { CodecError } from '../../src/codecs/codec-error.js';
import { encodeResult } from '../../src/core/result-format.js';
import type { StepResult } from '../../src/core/step-result.js';
import { decodeResult } from '../../src/index.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

// Without '__proto__' keys, which the encoder refuses on purpose (canonical-msgpack.ts).
const jsonValue = fc
  .jsonValue({ maxDepth: 3 })
  .filter((value) => !JSON.stringify(value).includes('"__proto__"'));
const offsets = fc
  .bigInt({ min: 0n, max: 2n ** 63n })
  .chain((first) =>
    fc.bigInt({ min: first, max: first + 10_000n }).map((last) => ({ first, last })),
  );

const stepResultArb: fc.Arbitrary<StepResult<unknown>> = fc
  .record({
    offsets,
    window: fc.option(
      fc.integer({ min: -1e12, max: 1e12 }).map((start) => ({ start, end: start + 60_000 })),
      { nil: null },
    ),
    keys: fc.uniqueArray(fc.oneof(fc.string(), fc.integer()), { maxLength: 5 }),
    value: jsonValue,
    late: fc.array(jsonValue, { maxLength: 3 }),
    lateDropped: fc.nat(100),
    deadLetters: fc.array(
      fc.record({
        offset: fc.bigInt({ min: 0n, max: 2n ** 63n }),
        stage: fc.constantFrom(
          'decode' as const,
          'event-time' as const,
          'key' as const,
          'reduce' as const,
        ),
        error: fc.string(),
        message: fc.uint8Array({ maxLength: 20 }),
      }),
      { maxLength: 2 },
    ),
  })
  .filter((r) => r.window !== null || r.keys.length === 0)
  .filter((r) => r.keys.length + r.late.length + r.deadLetters.length > 0)
  .map((r) => ({
    firstOffset: r.offsets.first,
    lastOffset: r.offsets.last,
    messages: 1,
    window: r.window,
    outputs: r.keys.map((key, i) => ({ key, count: i + 1, value: r.value })),
    late: r.late,
    lateDropped: r.lateDropped,
    filtered: 0,
    deadLetters: r.deadLetters,
  }));

const metadata = { source: 'in', producer: 'p', window: 'tumbling(1m)' };

/** What canonical msgpack keeps of a JSON value: -0 is written as 0 (see canonical-msgpack.ts). */
const canonical = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('the result wire format', () => {
  it('should read back every step result as written, packed as sections or as a batch', () => {
    fc.assert(
      fc.property(
        stepResultArb,
        fc.constantFrom('sections' as const, 'batch' as const),
        (result, pack) => {
          const parts = encodeResult(result, metadata, pack).map((bytes) => decodeResult(bytes));
          const head = parts[0];
          expect(head).toMatchObject({
            ...metadata,
            firstOffset: result.firstOffset,
            lastOffset: result.lastOffset,
            windowStart: result.window?.start,
            windowEnd: result.window?.end,
            outputCount: result.outputs.length,
            lateDropped: result.lateDropped,
          });
          expect(parts.flatMap((p) => p.outputs)).toEqual(
            result.outputs.map((o) => ({
              ...o,
              value: canonical(o.value),
              start: result.window?.start,
              end: result.window?.end,
            })),
          );
          expect(parts.flatMap((p) => p.late)).toEqual(result.late.map(canonical));
          const bytesAsArrays = (letters: readonly { message: Uint8Array }[]) =>
            letters.map((d) => ({ ...d, message: Array.from(d.message) }));
          expect(bytesAsArrays(parts.flatMap((p) => p.deadLetters))).toEqual(
            bytesAsArrays(result.deadLetters),
          );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('should refuse random bytes with a CodecError and nothing else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(() => decodeResult(bytes)).toThrow(CodecError);
      }),
      { numRuns: RUNS },
    );
  });

  it('should refuse a well-formed message that is not a well-formed result with a CodecError', () => {
    const property = fc.oneof(fc.string(), fc.integer(), fc.constant('1'), fc.constant('12'));
    const names = fc.constantFrom(
      'sw-format',
      'sw-source',
      'sw-producer',
      'sw-window',
      'sw-first-offset',
      'sw-last-offset',
      'sw-messages',
      'sw-outputs',
      'sw-late',
      'sw-late-dropped',
      'sw-dead-letters',
      'sw-part',
    );
    const section = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.record(
        { type: fc.constantFrom('output', 'late', 'dead-letters', 'other') },
        { requiredKeys: [] },
      ),
      fc.record({
        type: fc.constant('dead-letters'),
        records: fc.array(fc.jsonValue({ maxDepth: 2 })),
      }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(names, property),
        fc.array(section, { minLength: 1, maxLength: 3 }),
        (props, sections) => {
          const bytes = encodeMessage({
            applicationProperties: props,
            body: { type: 'data', sections: sections.map((s) => encodeCanonical(s)) },
          });
          try {
            decodeResult(bytes);
          } catch (error) {
            expect(error).toBeInstanceOf(CodecError);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});
