// The result wire format: every step result reads back as it was written, in every packing
// and format, and anything else is refused with a CodecError, never another exception.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCanonical, encodeCanonical } from '../../src/codecs/canonical-msgpack.js';
import { decodeMessage, encodeMessage } from '../../src/codecs/amqp-message.js';
import { CodecError } from '../../src/codecs/codec-error.js';
import { encodeResult } from '../../src/result-format/result-encoder.js';
import type { StepResult } from '../../src/result-format/step-result.js';
import { decodeResult } from '../../src/index.js';
import { Coverage, propertyParameters } from '../support/arbitraries/coverage.js';
import { packingName, packings } from '../support/arbitraries/scenario.js';

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
  it('should read back every step result as written, in every packing and format', () => {
    const coverage = new Coverage('result round trip');
    fc.assert(
      fc.property(stepResultArb, fc.constantFrom(...packings), (result, { pack, format }) => {
        coverage.run();
        coverage.count(packingName({ pack, format }));
        const parts = encodeResult(result, metadata, pack, format).map((bytes) =>
          decodeResult(bytes),
        );
        const head = parts[0];
        // 'single' is one message whatever the step holds; 'batch' one per section.
        if (pack === 'single') expect(parts.map((p) => p.part)).toEqual([undefined]);
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
            final: true,
            continues: false,
          })),
        );
        expect(parts.flatMap((p) => p.late)).toEqual(result.late.map(canonical));
        const bytesAsArrays = (letters: readonly { message: Uint8Array }[]) =>
          letters.map((d) => ({ ...d, message: Array.from(d.message) }));
        expect(bytesAsArrays(parts.flatMap((p) => p.deadLetters))).toEqual(
          bytesAsArrays(result.deadLetters),
        );
      }),
      propertyParameters(),
    );
    // Each of the four packings draws a fair share of the runs.
    coverage.expectRates(
      Object.fromEntries(packings.map((packing) => [packingName(packing), 0.2])),
    );
  });

  it('should write the outputs first, then the late section, then the dead-letter section', () => {
    const sectionTypes = (bytes: Uint8Array): unknown[] => {
      const body = decodeMessage(bytes).body;
      if (body?.type !== 'data') throw new Error('a result carries data sections');
      return body.sections.map((section) => (decodeCanonical(section) as { type: unknown }).type);
    };
    const coverage = new Coverage('result section order');
    fc.assert(
      fc.property(
        stepResultArb,
        fc.constantFrom('sections' as const, 'batch' as const),
        (result, pack) => {
          coverage.run();
          const all = result.outputs.length > 0 && result.late.length > 0;
          coverage.count(`${pack}: outputs and late values`, all);
          coverage.count(`${pack}: all three kinds`, all && result.deadLetters.length > 0);
          const types = encodeResult(result, metadata, pack).flatMap(sectionTypes);
          expect(types).toEqual([
            ...result.outputs.map(() => 'output'),
            ...(result.late.length > 0 ? ['late'] : []),
            ...(result.deadLetters.length > 0 ? ['dead-letters'] : []),
          ]);
        },
      ),
      propertyParameters(),
    );
    coverage.expectRates({
      'sections: outputs and late values': 0.25,
      'batch: outputs and late values': 0.25,
      'sections: all three kinds': 0.16,
      'batch: all three kinds': 0.16,
    });
  });

  it('should refuse random bytes with a CodecError and nothing else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(() => decodeResult(bytes)).toThrow(CodecError);
      }),
      propertyParameters(),
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
      jsonValue,
      fc.record(
        { type: fc.constantFrom('output', 'late', 'dead-letters', 'other') },
        { requiredKeys: [] },
      ),
      fc.record({ type: fc.constant('dead-letters'), records: fc.array(jsonValue) }),
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
          expect(() => decodeResult(bytes)).toThrow(CodecError);
        },
      ),
      propertyParameters(),
    );
  });
});
