// Both brokers' targets refuse a write that breaks the stream protocol's limits before
// anything is sent or stored, with the same non-retriable PublishError.
import { describe, expect, it } from 'vitest';
import { PublishError } from '../../../../src/common/errors.js';
import type { Target } from '../../../../src/ports/ports.js';
import { MemoryBroker } from '../../../../src/memory/index.js';
import { ScriptedLink, scriptedTarget } from '../scripted-link.js';

function memoryTarget(): Target {
  const broker = new MemoryBroker();
  broker.createStream('out');
  return broker.target('out', { producer: 'job' });
}

const one = [new Uint8Array(3)];
const writes: [string, bigint, () => Uint8Array[], RegExp][] = [
  ['a negative publishing id', -1n, () => one, /unsigned 64-bit/],
  ['a publishing id beyond 64 bits', 2n ** 64n, () => one, /unsigned 64-bit/],
  ['no message', 1n, () => [], /at least one message/],
  [
    'a batch of 65536 messages',
    1n,
    () => Array.from({ length: 65_536 }, () => new Uint8Array(3)),
    /at most 65535/,
  ],
  [
    'a message over the write limit',
    1n,
    () => [new Uint8Array(1_048_552)],
    /over the limit of 1048551/,
  ],
];

describe('a write beyond the protocol limits', () => {
  it.each(writes)(
    'is refused the same way by both brokers: %s',
    async (_what, id, messages, reason) => {
      const link = new ScriptedLink();
      const refusals = await Promise.all(
        [memoryTarget(), scriptedTarget(link)].map((target) =>
          target.publish(id, messages()).catch((error: unknown) => error),
        ),
      );

      for (const refusal of refusals) {
        expect(refusal).toBeInstanceOf(PublishError);
        expect(refusal).toMatchObject({ retriable: false, message: expect.stringMatching(reason) });
      }
      expect((refusals[0] as Error).message).toBe((refusals[1] as Error).message);
      expect(link.sent).toEqual([]);
    },
  );
});
