import { describe, expect, it } from 'vitest';
import { expectSameMessages } from '../../support/results/same-bytes.js';

const messages = (...texts: string[]) => texts.map((text) => Buffer.from(text));

describe('expectSameMessages', () => {
  it('passes on the same bytes, whatever views hold them', () => {
    const backing = Buffer.from('xxabc');
    expectSameMessages([backing.subarray(2)], messages('abc'));
  });

  it('names the first message that differs', () => {
    expect(() => expectSameMessages(messages('a', 'b', 'c'), messages('a', 'x', 'c'))).toThrow(
      /message 1 of 3 differs/,
    );
  });

  it('fails on a missing or an extra message', () => {
    expect(() => expectSameMessages(messages('a'), messages('a', 'b'))).toThrow(
      /1 messages where 2 were expected/,
    );
    expect(() => expectSameMessages(messages('a', 'b'), messages('a'))).toThrow(
      /2 messages where 1 were expected/,
    );
  });
});
