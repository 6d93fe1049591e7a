// A producer's batch frame: several plain messages, each under its own publishing id. Whether
// a batch fits (`plainEntriesFit`, what the producer asks before batching) must agree with the
// size of the frame actually written, right at frame_max.
import { describe, expect, it } from 'vitest';
import { maxWriteBytes, plainEntriesFit } from '../../../../src/ports/write-size.js';
import { plainEntriesFrame } from '../../../../src/rabbitmq/gaps/raw-publish.js';

const FRAME_MAX = 1_000;

function entries(lengths: readonly number[]) {
  return lengths.map((length, i) => ({
    publishingId: BigInt(i + 1),
    message: new Uint8Array(length).fill(i + 1),
  }));
}

describe('a Publish frame of plain entries', () => {
  it('writes each entry as its id, its size and its bytes, after the count', () => {
    const frame = plainEntriesFrame(7, entries([2, 1]));
    expect([...frame]).toEqual([
      ...[0, 0, 0, 36], // size after this field
      ...[0, 2, 0, 1, 7], // key Publish, version 1, publisher 7
      ...[0, 0, 0, 2], // two entries
      ...[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1],
      ...[0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 2],
    ]);
  });

  it.each([
    [[975]],
    [[976]],
    [[481, 482]],
    [[481, 483]],
    [[300, 300, 351]],
    [[300, 300, 352]],
    [[0, 0, 0, 0]],
  ])('fits in frame_max exactly when plainEntriesFit says so: %j', (lengths) => {
    const frame = plainEntriesFrame(0, entries(lengths));
    const fits = frame.length <= FRAME_MAX;
    expect(plainEntriesFit(lengths, maxWriteBytes(FRAME_MAX))).toBe(fits);
  });

  it('has cases on both sides of frame_max', () => {
    const sizes = [
      [481, 482],
      [481, 483],
    ].map((l) => plainEntriesFrame(0, entries(l)).length);
    expect(sizes).toEqual([FRAME_MAX, FRAME_MAX + 1]);
  });
});
