// Result format '2': every message names its body's shape in its content-type and what it
// holds in `sw-holds`; a batch part carries its section's type and, for an output, its key,
// window and finality as application properties, for readers that are not ours.
import { describe, expect, it } from 'vitest';
import { decodeCanonical } from '../../../src/codecs/canonical-msgpack.js';
import { decodeMessage, encodeMessage } from '../../../src/codecs/amqp-message.js';
import { decodeResultHeader } from '../../../src/result-format/result-decoder.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import {
  RESULT_FORMAT_VERSION,
  SECTIONS_CONTENT_TYPE,
  type PackMode,
  type SingleFormat,
} from '../../../src/result-format/result-format.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import { CodecError, decodeResult } from '../../../src/index.js';

const metadata = { source: 'in', producer: 'p', window: 'tumbling(1m)' };
const WINDOW = { start: 1767268800000, end: 1767268860000 };

const result = (over: Partial<StepResult<unknown>> = {}): StepResult<unknown> => ({
  firstOffset: 10n,
  lastOffset: 13n,
  messages: 4,
  window: WINDOW,
  outputs: [
    { key: 's1', count: 1, value: 5 },
    { key: 7, count: 1, value: 6 },
  ],
  late: [{ value: 1 }],
  lateDropped: 0,
  filtered: 0,
  deadLetters: [{ offset: 12n, stage: 'decode', error: 'bad', message: Uint8Array.of(1) }],
  ...over,
});

const PACKINGS: readonly [PackMode, SingleFormat | undefined][] = [
  ['single', 'msgpack'],
  ['single', 'json'],
  ['sections', undefined],
  ['batch', undefined],
];

const described = (bytes: Uint8Array) => {
  const message = decodeMessage(bytes);
  const properties = message.applicationProperties ?? {};
  return { contentType: message.properties?.contentType, properties };
};

describe("result format '2'", () => {
  it("should be version '2', and set a content-type and sw-holds on every message of every packing", () => {
    expect(RESULT_FORMAT_VERSION).toBe('2');
    const seen = PACKINGS.map(([pack, format]) =>
      encodeResult(result(), metadata, pack, format).map((bytes) => {
        const { contentType, properties } = described(bytes);
        expect(properties['sw-format']).toBe('2');
        return [contentType, properties['sw-holds']];
      }),
    );
    expect(seen).toEqual([
      [['application/msgpack', 'output,late,dead-letters']],
      [['application/json', 'output,late,dead-letters']],
      [['application/msgpack-seq', 'output,late,dead-letters']],
      [
        ['application/msgpack', 'output'],
        ['application/msgpack', 'output'],
        ['application/msgpack', 'late'],
        ['application/msgpack', 'dead-letters'],
      ],
    ]);
  });

  it('should name in sw-holds only the kinds a result has, in section order', () => {
    const holds = (r: StepResult<unknown>) =>
      described(encodeResult(r, metadata, 'single')[0] as Uint8Array).properties['sw-holds'];
    expect(holds(result({ late: [], deadLetters: [] }))).toBe('output');
    expect(holds(result({ deadLetters: [] }))).toBe('output,late');
    expect(holds(result({ outputs: [], late: [] }))).toBe('dead-letters');
    expect(holds(result({ outputs: [], late: [], deadLetters: [] }))).toBe('none');
  });

  it("should write a step without any section as one 'application/msgpack-seq' message of one empty data section in 'sections' and 'batch'", () => {
    const empty = result({ outputs: [], late: [], deadLetters: [], filtered: 4 });
    for (const pack of ['sections', 'batch'] as const) {
      const messages = encodeResult(empty, metadata, pack);
      expect(messages).toHaveLength(1);
      const message = decodeMessage(messages[0] as Uint8Array);
      expect(message.properties?.contentType).toBe(SECTIONS_CONTENT_TYPE);
      expect(message.body).toEqual({ type: 'data', sections: [new Uint8Array(0)] });
      expect(decodeResult(messages[0] as Uint8Array)).toMatchObject({ filtered: 4, outputs: [] });
    }
  });

  it("should give each 'batch' part its section, and an output part its key, window and finality", () => {
    const step = result({
      window: null,
      outputs: [
        { key: 's1', start: 0, end: 60_000, count: 2, value: 5, final: false },
        { key: 7, start: 60_000, end: 120_000, count: 1, value: 6, continues: true },
        { key: null, start: 0, end: 60_000, count: 1, value: 1 },
        { key: '', start: 0, end: 60_000, count: 1, value: 2 },
      ],
    });
    const parts = encodeResult(step, metadata, 'batch').map((bytes) => {
      const { properties } = described(bytes);
      return Object.fromEntries(
        Object.entries(properties).filter(
          ([name]) =>
            !['sw-format', 'sw-source', 'sw-producer', 'sw-window'].includes(name) &&
            !/^sw-(first|last)-offset|^sw-(messages|outputs|late|late-dropped|dead-letters)$/.test(
              name,
            ),
        ),
      );
    });
    const output = (i: number, more: Record<string, string>) => ({
      'sw-part': String(i),
      'sw-parts': '6',
      'sw-holds': 'output',
      ...more,
    });
    expect(parts).toEqual([
      output(0, {
        'sw-key': 's1',
        'sw-key-type': 'string',
        'sw-output-start': '0',
        'sw-output-end': '60000',
        'sw-final': 'false',
      }),
      output(1, {
        'sw-key': '7',
        'sw-key-type': 'number',
        'sw-output-start': '60000',
        'sw-output-end': '120000',
        'sw-final': 'true',
        'sw-continues': 'true',
      }),
      // No empty string property: the stock JS client cannot read one back.
      output(2, {
        'sw-key-type': 'null',
        'sw-output-start': '0',
        'sw-output-end': '60000',
        'sw-final': 'true',
      }),
      output(3, {
        'sw-key-type': 'string',
        'sw-output-start': '0',
        'sw-output-end': '60000',
        'sw-final': 'true',
      }),
      { 'sw-part': '4', 'sw-parts': '6', 'sw-holds': 'late' },
      { 'sw-part': '5', 'sw-parts': '6', 'sw-holds': 'dead-letters' },
    ]);
  });

  it('should decode every packing to the same result, telling a batch part from a single array', () => {
    const step = result();
    const decodedOf = (pack: PackMode, format?: SingleFormat) =>
      encodeResult(step, metadata, pack, format).map((bytes) => decodeResult(bytes));
    const [single] = decodedOf('single');
    expect(decodedOf('sections')).toEqual([single]);
    // JSON carries values as JSON reads them; these are plain numbers and strings.
    expect(decodedOf('single', 'json')).toEqual([single]);
    const parts = decodedOf('batch');
    expect(parts.flatMap((p) => p.outputs)).toEqual(single?.outputs);
    expect(parts.flatMap((p) => p.late)).toEqual(single?.late);
    expect(parts.flatMap((p) => p.deadLetters)).toEqual(single?.deadLetters);
    expect(parts.map((p) => p.part)).toEqual([0, 1, 2, 3].map((index) => ({ index, of: 4 })));
  });

  it('should refuse a body whose shape its content-type does not name, with a CodecError', () => {
    const [part] = encodeResult(result(), metadata, 'batch');
    const [single] = encodeResult(result(), metadata, 'single');
    const [sections] = encodeResult(result(), metadata, 'sections');
    const spoiled = (bytes: Uint8Array, over: (m: ReturnType<typeof decodeMessage>) => object) =>
      encodeMessage({ ...decodeMessage(bytes), ...over(decodeMessage(bytes)) });
    // A single array where a part's map belongs, and a part's map where an array belongs.
    const partAsArray = spoiled(part as Uint8Array, () => ({
      body: decodeMessage(single as Uint8Array).body,
    }));
    const singleAsMap = spoiled(single as Uint8Array, () => ({
      body: decodeMessage(part as Uint8Array).body,
    }));
    const sectionsWithoutType = spoiled(sections as Uint8Array, () => ({ properties: {} }));
    expect(() => decodeResult(partAsArray)).toThrow('a result section must be a msgpack map');
    expect(() => decodeResult(singleAsMap)).toThrow(
      "a 'application/msgpack' result's data section must be an array",
    );
    expect(() => decodeResult(sectionsWithoutType)).toThrow(CodecError);
    expect(() => decodeResult(sectionsWithoutType)).toThrow(
      "unknown result content-type 'undefined'",
    );
    // The header alone does not look at the body.
    expect(decodeResultHeader(sectionsWithoutType).lastOffset).toBe(13n);
  });

  it('should write the same bytes for the same result, whatever order its values were built in', () => {
    const step = result({ outputs: [{ key: 'a', count: 1, value: { b: 1, a: [2n, 'x'] } }] });
    const again = result({ outputs: [{ key: 'a', count: 1, value: { a: [2n, 'x'], b: 1 } }] });
    let compared = 0;
    for (const [pack, format] of PACKINGS) {
      const first = encodeResult(step, metadata, pack, format);
      expect(encodeResult(step, metadata, pack, format)).toEqual(first);
      expect(encodeResult(again, metadata, pack, format)).toEqual(first);
      compared += first.length;
    }
    expect(compared).toBe(1 + 1 + 1 + 3);
    // The value's map is canonical inside a part too.
    const [part] = encodeResult(again, metadata, 'batch');
    const body = decodeMessage(part as Uint8Array).body;
    expect(
      body?.type === 'data' &&
        Object.keys(decodeCanonical(body.sections[0] as Uint8Array) as object),
    ).toEqual(['count', 'end', 'key', 'start', 'type', 'value']);
  });
});
