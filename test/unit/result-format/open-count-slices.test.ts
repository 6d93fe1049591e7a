// A step of several writes writes per-key count windows' open counts once, in slices (see
// `encodeStep`): slice j on the first message of write j, every message naming how many.
// These pin where the slices go, that they join back into the list whatever characters the
// keys hold, that a step which fits one write keeps its bytes, and how a message reads.
import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeMessage } from '../../../src/codecs/amqp-message.js';
import { encodeCanonicalJson } from '../../../src/codecs/canonical-json.js';
import type { Key } from '../../../src/common/keyed-output.js';
import {
  decodeResult,
  decodeResultHeader,
  joinOpenCountSlices,
} from '../../../src/result-format/result-decoder.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { encodeStep } from '../../../src/result-format/step-writes.js';
import {
  ResultProperty,
  type PackMode,
  type SingleFormat,
} from '../../../src/result-format/result-format.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import { writeSize } from '../../../src/ports/write-size.js';
import { lastWriteId, writeId } from '../../../src/result-format/publishing-id.js';
import { CodecError } from '../../../src/index.js';

const metadata = { source: 'in', producer: 'p', window: 'count(2)' };
const LAST = 4_000n;

/** A step at offset 4,000 closing `outputs` windows, with `open` windows left open. */
function step(open: readonly Key[], outputs = 1): StepResult<number> {
  return {
    firstOffset: LAST,
    lastOffset: LAST,
    messages: 1,
    window: { start: 0, end: 1 },
    outputs: Array.from({ length: outputs }, (_, i) => ({
      key: `closed-${i}`,
      value: i,
      count: 2,
      start: 0,
      end: 1,
    })),
    late: [],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [],
    recovery: {
      watermark: 10,
      offset: 0n,
      offsetWatermark: Number.NEGATIVE_INFINITY,
      openCounts: open.map((key, i) => (i % 5 === 0 ? [key, BigInt(i), 2] : [key, BigInt(i)])),
    },
  };
}

/** Keys of every UTF-8 length: 1 byte, 2 ('é'), 3 ('€'), 4 (an astral '🔑'), and numbers. */
const keys = (count: number): Key[] =>
  Array.from({ length: count }, (_, i) =>
    i % 7 === 6 ? i : `${['k', 'é', '€', '🔑'][i % 4] as string}-${i}`,
  );

const properties = (message: Uint8Array) =>
  decodeMessage(message).applicationProperties as Record<string, string | undefined>;

const PACKINGS: readonly (readonly [PackMode, SingleFormat])[] = [
  ['single', 'msgpack'],
  ['single', 'json'],
  ['sections', 'msgpack'],
  ['batch', 'msgpack'],
];

describe('open counts of a step of several writes', () => {
  for (const [pack, format] of PACKINGS) {
    describe(`${pack} ${format}`, () => {
      it('are cut into slices on the first message of the first writes, which join back into the list, each write within the limit', () => {
        for (const [open, outputs, limit] of [
          [600, 1, 4_071],
          [600, 120, 4_071],
          [50, 300, 2_048],
          [2_000, 40, 16_000],
        ] as const) {
          const result = step(keys(open), outputs);
          const writes = encodeStep(result, metadata, pack, format, limit, lastWriteId(3_999n));
          const what = `${open} open, ${outputs} outputs, limit ${limit}`;
          expect(writes.length, what).toBeGreaterThan(1);
          for (const write of writes) expect(writeSize(write), what).toBeLessThanOrEqual(limit);
          const all = writes.flat().map(properties);
          const count = Number(all[0]?.[ResultProperty.openCountSlices]);
          expect(count, what).toBeGreaterThanOrEqual(1);
          expect(all.every((p) => p[ResultProperty.openCountSlices] === String(count))).toBe(true);
          const texts = writes.map((write) =>
            write.map((message) => properties(message)[ResultProperty.openCounts]),
          );
          // Slice j on write j's first message, nowhere else.
          for (const [j, write] of texts.entries()) {
            expect(write[0] !== undefined, `${what}, write ${j}`).toBe(j < count);
            expect(write.slice(1).every((text) => text === undefined)).toBe(true);
          }
          const slices = texts.flatMap((write) => (write[0] === undefined ? [] : [write[0]]));
          expect(joinOpenCountSlices(slices), what).toEqual(result.recovery?.openCounts);
          // Each message reads as its own: the slice it holds, at its write's index.
          for (const [j, write] of writes.entries()) {
            const header = decodeResultHeader(write[0] as Uint8Array);
            expect(header.recovery?.openCounts).toBeUndefined();
            expect(header.recovery?.watermark).toBe(10);
            expect(header.openCountSlices).toEqual(
              j < count ? { count, slice: { index: j, text: slices[j] } } : { count },
            );
          }
          // Every section once, in order, across the writes.
          const decoded = writes.flat().map((message) => decodeResult(message));
          expect(decoded.flatMap((r) => r.outputs.map((o) => o.key))).toEqual(
            result.outputs.map((o) => o.key),
          );
          expect(decoded.map((r) => r.part?.index)).toEqual(decoded.map((_, i) => i));
        }
      });

      it('add writes holding no section when there are more slices than writes of sections', () => {
        const result = step(keys(900), 1);
        const writes = encodeStep(result, metadata, pack, format, 4_071, 0n);
        const count = Number(
          properties(writes[0]?.[0] as Uint8Array)[ResultProperty.openCountSlices],
        );
        expect(count).toBeGreaterThanOrEqual(4);
        expect(writes).toHaveLength(count);
        const holds = writes.map((write) => write.map((m) => properties(m)[ResultProperty.holds]));
        expect(holds.slice(0, -1).flat()).toEqual(Array.from({ length: count - 1 }, () => 'none'));
        expect(holds.at(-1)).toEqual(['output']);
        // The last write holds the last slice: it reads at index count - 1.
        expect(
          decodeResultHeader(writes.at(-1)?.[0] as Uint8Array).openCountSlices?.slice?.index,
        ).toBe(count - 1);
        expect(properties(writes[1]?.[0] as Uint8Array)[ResultProperty.writeId]).toBe(
          String(writeId(LAST, 1, count)),
        );
      });

      it('stay whole on every message of a step that fits one write, as encodeResult writes it', () => {
        const result = step(keys(30), 3);
        const writes = encodeStep(result, metadata, pack, format, 1_048_551, 0n);
        expect(writes).toEqual([encodeResult(result, metadata, pack, format)]);
        const header = decodeResultHeader(writes[0]?.[0] as Uint8Array);
        expect(header.openCountSlices).toBeUndefined();
        expect(header.recovery?.openCounts).toEqual(result.recovery?.openCounts);
      });
    });
  }

  it('are the text canonical JSON writes for the list, whatever the keys', () => {
    const tricky: Key[] = [
      '',
      'a"b\\c',
      '\u0000\n',
      '\ud800 lone',
      '🔑',
      'é',
      0,
      -0,
      1.5,
      -1e21,
      2 ** 53,
      null,
    ];
    const result = step(tricky);
    const [message] = encodeResult(result, metadata, 'single');
    const expected = (result.recovery?.openCounts ?? []).map(([key, offset, skip]) =>
      skip === undefined ? [key, String(offset)] : [key, String(offset), skip],
    );
    expect(properties(message as Uint8Array)[ResultProperty.openCounts]).toBe(
      new TextDecoder().decode(encodeCanonicalJson(expected)),
    );
    expect(() => encodeResult(step([Number.NaN]), metadata, 'single')).toThrow(
      new CodecError('cannot encode NaN as JSON', 0),
    );
  });

  it('refuse slices that do not join into the list, and a slice count below 1', () => {
    expect(() => joinOpenCountSlices(['[["a","1"]', ',["b"'])).toThrow(CodecError);
    const writes = encodeStep(step(keys(600)), metadata, 'single', 'msgpack', 4_071, 0n);
    const message = decodeMessage(writes[0]?.[0] as Uint8Array);
    const spoiled = { ...message.applicationProperties, [ResultProperty.openCountSlices]: '0' };
    const bytes = encodeMessage({ ...message, applicationProperties: spoiled });
    expect(() => decodeResultHeader(bytes)).toThrow(
      "result property 'sw-open-counts-slices' must be above 0",
    );
  });
});
