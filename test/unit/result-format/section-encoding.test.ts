// Output sections are written by canonical-msgpack-writer.ts with their keys in a fixed order,
// not by the generic canonical encoder: these pin that the bytes are the encoder's, for every
// kind of key and value and in every packing, and that a failed result leaves nothing behind.
import { describe, expect, it } from 'vitest';
import { encodeCanonical } from '../../../src/codecs/canonical-msgpack.js';
import { decodeMessage } from '../../../src/codecs/amqp-message.js';
import type { KeyedOutput } from '../../../src/common/keyed-output.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { type PackMode } from '../../../src/result-format/result-format.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import { CodecError } from '../../../src/index.js';

const metadata = { source: 'in', producer: 'p', window: 'hopping(1m, 20s)' };
const WINDOW = { start: 1_735_689_600_000, end: 1_735_689_660_000 };

/** Values on each side of every msgpack width the encoder chooses, and each other type. */
const VALUES: readonly unknown[] = [
  0,
  -0,
  1,
  127,
  128,
  255,
  256,
  65_535,
  65_536,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53,
  -1,
  -32,
  -33,
  -128,
  -129,
  -32_768,
  -32_769,
  -(2 ** 31),
  -(2 ** 31) - 1,
  0.5,
  -1.25,
  NaN,
  Infinity,
  Number.MAX_VALUE,
  '',
  'a',
  'x'.repeat(31),
  'x'.repeat(32),
  'x'.repeat(255),
  'x'.repeat(256),
  'x'.repeat(65_536),
  'héllo',
  '\ud800 lone',
  'é'.repeat(40),
  true,
  false,
  null,
  5n,
  -(2n ** 63n),
  new Date(1_700_000_000_000),
  new Uint8Array([1, 2]),
  [1, 'b', [null]],
  { b: 1, a: { d: undefined, c: 'z' } },
];
/** Keys: strings (ASCII, not, long, empty), numbers of each width, null. */
const KEYS = ['sensor-1', '', 'ключ', 'k'.repeat(40), 0, -5, 300, 2 ** 40, 0.5, null] as const;

function outputsOf(values: readonly unknown[]): KeyedOutput<unknown>[] {
  return values.map((value, index) => ({
    key: KEYS[index % KEYS.length] ?? null,
    count: index * 1_000,
    value,
    // Event-time outputs carry their own window; step outputs take the result's.
    ...(index % 2 === 0 ? { start: WINDOW.start + index, end: WINDOW.end + index } : {}),
    ...(index % 3 === 0 ? { final: false } : {}),
    ...(index % 5 === 0 ? { continues: true } : {}),
  }));
}

function resultOf(outputs: KeyedOutput<unknown>[]): StepResult<unknown> {
  return {
    firstOffset: 0n,
    lastOffset: 9n,
    messages: 10,
    window: WINDOW,
    outputs,
    late: [1, 'two'],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [{ offset: 3n, stage: 'decode', error: 'bad', message: new Uint8Array([7]) }],
  };
}

/** What the generic encoder writes for each section: the sections as the format defines them. */
function expectedSections(result: StepResult<unknown>): unknown[] {
  return [
    ...result.outputs.map((output) => ({
      type: 'output',
      key: output.key,
      start: output.start ?? WINDOW.start,
      end: output.end ?? WINDOW.end,
      count: output.count,
      value: output.value,
      ...(output.final === false ? { final: false } : {}),
      ...(output.continues === true ? { continues: true } : {}),
    })),
    { type: 'late', values: result.late },
    {
      type: 'dead-letters',
      records: [{ offset: '3', stage: 'decode', error: 'bad', message: new Uint8Array([7]) }],
    },
  ];
}

function dataSections(messages: Uint8Array[]): Uint8Array[] {
  return messages.flatMap((bytes) => {
    const { body } = decodeMessage(bytes);
    if (body?.type !== 'data') throw new Error('a result has data sections');
    return body.sections;
  });
}

const encoded = (result: StepResult<unknown>, pack: PackMode): Uint8Array[] =>
  dataSections(encodeResult(result, metadata, pack));

describe('output sections written with their keys in canonical order', () => {
  const result = resultOf(outputsOf([...VALUES, undefined]));

  it("writes 'single''s array byte for byte as the canonical encoder does", () => {
    expect(encoded(result, 'single')).toEqual([encodeCanonical(expectedSections(result))]);
  });

  it("writes each section of 'sections' and 'batch' as the canonical encoder does", () => {
    const expected = expectedSections(result).map((section) => encodeCanonical(section));
    expect(encoded(result, 'sections')).toEqual(expected);
    expect(encoded(result, 'batch')).toEqual(expected);
  });

  it('writes the same key and value alike in every window and result, whatever came between', () => {
    const one = resultOf(outputsOf(['a', 1.5, { x: 1 }]));
    const first = encoded(one, 'single');
    encoded(resultOf(outputsOf(['é'.repeat(70_000), 2 ** 40, [1, 2]])), 'single');
    expect(encoded(one, 'single')).toEqual(first);
  });

  it('leaves nothing of a result that failed to encode in the next one', () => {
    const good = resultOf(outputsOf([1, 2, 3]));
    const expected = encoded(good, 'single');
    expect(() => encoded(resultOf(outputsOf([1, 2, new Map()])), 'single')).toThrow(CodecError);
    expect(encoded(good, 'single')).toEqual(expected);
  });

  it('refuses a value nested too deep as the canonical encoder does, counting from the top', () => {
    const nested = (depth: number): unknown => (depth === 0 ? 1 : { n: nested(depth - 1) });
    // In 'single' the array is depth 1, the section 2, the value 3: at most 97 objects below.
    const deep = resultOf(outputsOf([nested(97)]));
    expect(() => encodeCanonical(expectedSections(deep))).not.toThrow();
    expect(encoded(deep, 'single')).toEqual([encodeCanonical(expectedSections(deep))]);
    for (const depth of [98, 99]) {
      const tooDeep = resultOf(outputsOf([nested(depth)]));
      const refusal = (encode: () => unknown): unknown => {
        try {
          encode();
        } catch (error) {
          return error;
        }
        throw new Error('not refused');
      };
      const expected = refusal(() => encodeCanonical(expectedSections(tooDeep)));
      expect(expected).toBeInstanceOf(CodecError);
      expect(refusal(() => encoded(tooDeep, 'single'))).toEqual(expected);
    }
  });
});
