// decodeResult refuses each way a message can fail to be a result of this format, naming what
// is wrong; the property test only checks that whatever it throws is a CodecError.
import { describe, expect, it } from 'vitest';
import { decodeCanonical, encodeCanonical } from '../../../src/codecs/canonical-msgpack.js';
import {
  decodeMessage,
  encodeMessage,
  type AmqpMessage,
} from '../../../src/codecs/amqp-message.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { SECTIONS_CONTENT_TYPE } from '../../../src/result-format/result-format.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import { CodecError, decodeResult } from '../../../src/index.js';

const step: StepResult<number> = {
  firstOffset: 10n,
  lastOffset: 12n,
  messages: 3,
  window: { start: 0, end: 60_000 },
  outputs: [{ key: 'a', count: 1, value: 5 }],
  late: [7],
  lateDropped: 0,
  filtered: 0,
  deadLetters: [{ offset: 11n, stage: 'decode', error: 'bad', message: new Uint8Array([1]) }],
};
const metadata = { source: 'in', producer: 'p', window: 'tumbling(1m)' };

/** The valid result's properties and decoded sections, to be spoiled one at a time. */
function parts(): { properties: Record<string, unknown>; sections: Record<string, unknown>[] } {
  const message = decodeMessage(encodeResult(step, metadata, 'sections')[0] as Uint8Array);
  if (message.body?.type !== 'data') throw new Error('a result has data sections');
  return {
    properties: { ...message.applicationProperties },
    sections: message.body.sections.map((s) => decodeCanonical(s) as Record<string, unknown>),
  };
}

/** A 'sections' result (its content-type says so) of these properties and sections. */
function encode(properties: Record<string, unknown>, sections: unknown[]): Uint8Array {
  return encodeMessage({
    properties: { contentType: SECTIONS_CONTENT_TYPE },
    applicationProperties: properties as AmqpMessage['applicationProperties'],
    body: { type: 'data', sections: sections.map((s) => encodeCanonical(s)) },
  });
}

function withProperty(name: string, value: unknown): Uint8Array {
  const { properties, sections } = parts();
  return encode({ ...properties, [name]: value }, sections);
}

/** Section 0 is the output, 1 the late section, 2 the dead letters. */
function withSection(
  index: number,
  spoil: (section: Record<string, unknown>) => unknown,
): Uint8Array {
  const { properties, sections } = parts();
  return encode(
    properties,
    sections.map((s, i) => (i === index ? spoil(s) : s)),
  );
}

const deadLetter = (fields: Record<string, unknown>) => (s: Record<string, unknown>) => ({
  ...s,
  records: [{ ...(s.records as Record<string, unknown>[])[0], ...fields }],
});

describe('decoding a result', () => {
  it('should read the unspoiled result back', () => {
    const { properties, sections } = parts();
    expect(decodeResult(encode(properties, sections))).toMatchObject({
      firstOffset: 10n,
      outputs: [{ key: 'a', count: 1, value: 5 }],
      late: [7],
      deadLetters: [{ offset: 11n }],
    });
  });

  it('should write a step of one section as one message, part 0 of 1, when packing as a batch', () => {
    const single = { ...step, late: [], deadLetters: [] };
    const messages = encodeResult(single, metadata, 'batch');
    expect(messages).toHaveLength(1);
    expect(decodeResult(messages[0] as Uint8Array)).toMatchObject({
      part: { index: 0, of: 1 },
      outputs: [{ key: 'a', value: 5 }],
    });
  });

  it.each([
    ['another format version', withProperty('sw-format', '4'), "unsupported result format '4'"],
    [
      'a version 2 result without a content-type',
      encodeMessage({
        applicationProperties: parts().properties as AmqpMessage['applicationProperties'],
        body: { type: 'data', sections: [encodeCanonical({ type: 'late', values: [] })] },
      }),
      "unknown result content-type 'undefined'",
    ],
    [
      'a body that is not data sections',
      encodeMessage({
        applicationProperties: parts().properties as AmqpMessage['applicationProperties'],
        body: { type: 'value', value: 1 },
      }),
      'a result carries its sections in data sections',
    ],
    [
      'a property that is not a string',
      withProperty('sw-messages', 3),
      "result property 'sw-messages' must be a string, got number",
    ],
    [
      'a count that is not an integer',
      withProperty('sw-messages', '1.5'),
      "result property 'sw-messages' must be an integer, got '1.5'",
    ],
    [
      'an offset with a leading zero',
      withProperty('sw-first-offset', '010'),
      "result property 'sw-first-offset' must be a decimal offset, got '010'",
    ],
    ['an offset with a sign', withProperty('sw-first-offset', '-1'), 'must be a decimal offset'],
    [
      'an offset with a trailing letter',
      withProperty('sw-first-offset', '1x'),
      'must be a decimal offset',
    ],
    [
      'an offset with a leading letter',
      withProperty('sw-first-offset', 'x1'),
      'must be a decimal offset',
    ],
    [
      'a section that is an array',
      withSection(0, () => [1]),
      'a result section must be a msgpack map',
    ],
    ['a section that is nil', withSection(0, () => null), 'a result section must be a msgpack map'],
    [
      'a section that is a number',
      withSection(0, () => 1),
      'a result section must be a msgpack map',
    ],
    [
      'a section of an unknown type',
      withSection(0, (s) => ({ ...s, type: 'other' })),
      "unknown result section type 'other'",
    ],
    [
      'an output key that is a boolean',
      withSection(0, (s) => ({ ...s, key: true })),
      "an output's key must be a string, a number or null",
    ],
    [
      'an output start that is a string',
      withSection(0, (s) => ({ ...s, start: '0' })),
      "section field 'start' must be a number",
    ],
    [
      'late values that are not an array',
      withSection(1, (s) => ({ ...s, values: 7 })),
      "section field 'values' must be an array",
    ],
    [
      'a dead letter whose message is not binary',
      withSection(2, deadLetter({ message: 'x' })),
      "section field 'message' must be binary",
    ],
    [
      'a dead letter offset that is not decimal',
      withSection(2, deadLetter({ offset: '1.0' })),
      "dead letter offset must be a decimal offset, got '1.0'",
    ],
  ])('should refuse %s with a CodecError naming it', (_, bytes, reason) => {
    expect(() => decodeResult(bytes)).toThrow(CodecError);
    expect(() => decodeResult(bytes)).toThrow(reason);
  });

  it('should accept a null key, as an unkeyed window writes it', () => {
    const output = decodeResult(withSection(0, (s) => ({ ...s, key: null }))).outputs[0];
    expect(output?.key).toBeNull();
  });
});
