// How a target tells one producer's result among what its stream stores
// (src/result-format/stored-result.ts): the wanted write, the producer's results before and
// after it (which bound a search), and everything else, whatever its bytes.
import { describe, expect, it } from 'vitest';
import { encodeMessage } from '../../../src/codecs/amqp-message.js';
import { packChunk } from '../../../src/ports/pack-chunk.js';
import { findResultIn } from '../../../src/result-format/stored-result.js';
import { ResultProperty } from '../../../src/result-format/result-format.js';
import { lastWriteId, writeId } from '../../../src/result-format/publishing-id.js';

/** A stored message with `properties` as its application properties. */
function stored(properties: Record<string, unknown>): Uint8Array {
  return encodeMessage({
    applicationProperties: properties as Record<string, string>,
    body: { type: 'data', sections: [new Uint8Array([1])] },
  });
}

/** A result of producer `producer` for the step at `last`, write `write` when given. */
function result(producer: string, last: unknown, write?: unknown): Uint8Array {
  return stored({
    [ResultProperty.producer]: producer,
    [ResultProperty.lastOffset]: last,
    ...(write === undefined ? {} : { [ResultProperty.writeId]: write }),
  });
}

/** What `messages`, stored in one chunk, say of `job`'s write 1 of 3 of the step at 5. */
function find(messages: readonly Uint8Array[], count = messages.length) {
  return findResultIn(packChunk(100n, 0, messages), count, 'job', writeId(5n, 1, 3));
}

describe("a producer's result among the stored messages", () => {
  it('is found at its index, with its part in the step', () => {
    const wanted = String(writeId(5n, 1, 3));
    const other = result('other', '5', wanted);
    expect(find([other, result('job', '5', wanted)])).toEqual({ index: 1, part: 0 });
    const parted = stored({
      [ResultProperty.producer]: 'job',
      [ResultProperty.lastOffset]: '5',
      [ResultProperty.writeId]: wanted,
      [ResultProperty.part]: '3',
    });
    expect(find([parted])).toEqual({ index: 0, part: 3 });
    // A part that is no decimal number counts as 0 (the first message of its write).
    for (const part of ['x', 3]) {
      const odd = stored({
        [ResultProperty.producer]: 'job',
        [ResultProperty.lastOffset]: '5',
        [ResultProperty.writeId]: wanted,
        [ResultProperty.part]: part,
      });
      expect(find([odd])).toEqual({ index: 0, part: 0 });
    }
  });

  it('is looked for only among the first `count` messages', () => {
    const wanted = result('job', '5', String(writeId(5n, 1, 3)));
    expect(find([result('other', '1'), result('other', '2'), wanted], 2)).toEqual({
      earlier: false,
      later: false,
    });
  });

  it('orders the producer’s other results by step offset, then write', () => {
    const earlier = { earlier: true, later: false };
    const later = { earlier: false, later: true };
    expect(find([result('job', '5', String(writeId(5n, 0, 3)))])).toEqual(earlier);
    expect(find([result('job', '4')])).toEqual(earlier);
    expect(find([result('job', '4', String(lastWriteId(4n)))])).toEqual(earlier);
    expect(find([result('job', '5', String(lastWriteId(5n)))])).toEqual(later);
    // Without a write id, a step's one write: its last.
    expect(find([result('job', '5')])).toEqual(later);
    expect(find([result('job', '6', String(writeId(6n, 0, 2)))])).toEqual(later);
    // The same write index of another step is not the wanted write.
    expect(find([result('job', '6', String(writeId(6n, 1, 3)))])).toEqual(later);
    expect(find([result('job', '4'), result('job', '6')])).toEqual({ earlier: true, later: true });
  });

  it('passes over what is not one of its results: other bytes, another producer, properties that are no ids', () => {
    const nothing = { earlier: false, later: false };
    const notAmqp = new Uint8Array([0xff, 0x00, 0x13]);
    const lasts: unknown[] = ['x', '05', '5x', 'x5', '-5', 5];
    const writes: unknown[] = ['x', '1x', 'x1', writeId(5n, 1, 3)];
    const odd = [
      notAmqp,
      stored({}),
      result('other', '5', String(writeId(5n, 1, 3))),
      ...lasts.map((last) => result('job', last)),
      ...writes.map((write) => result('job', '5', write)),
    ];
    for (const message of odd) expect(find([message])).toEqual(nothing);
  });
});
