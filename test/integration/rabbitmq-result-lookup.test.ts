// The RabbitMQ target's readResult: a producer's result under a publishing id, searched
// backward from the stream's end in growing windows (src/rabbitmq/result-lookup.ts).
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeResult } from '../../src/index.js';
import { lookUpResult, windowsReaching } from '../../src/rabbitmq/write/result-lookup.js';
import { rabbitForTests } from '../support/brokers/rabbitmq.js';
import { othersResults, publishInTurn, resultMessages } from '../support/results/stored-results.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const TIMEOUT_MS = bound(10_000);

const lookUp = (stream: string, producer: string, id: bigint) =>
  lookUpResult(real.rabbit.params, stream, producer, id, TIMEOUT_MS);

/** The message a lookup answered, decoded; fails the test when there is none. */
function decoded(message: Uint8Array | undefined) {
  if (message === undefined) throw new Error('no result found');
  return decodeResult(message);
}

describe("the RabbitMQ target's readResult", () => {
  it("answers the only producer's result under the id, as published, and undefined for an id it never published", async () => {
    const stream = await real.newStream('lookup-one');
    await publishInTurn(real.rabbit, stream, [
      Array.from({ length: 300 }, (_, i) => ({ producer: 'solo', id: BigInt(3 * i) })),
    ]);
    const target = real.rabbit.target(stream, { producer: 'solo' });
    try {
      expect(await target.readResult(897n)).toEqual(resultMessages('solo', 897n)[0]);
      expect(await target.readResult(30n)).toEqual(resultMessages('solo', 30n)[0]);
      expect(await target.readResult(0n)).toEqual(resultMessages('solo', 0n)[0]);
      expect(await target.readResult(31n)).toBeUndefined();
      expect(await target.readResult(900n)).toBeUndefined();
    } finally {
      await target.close();
    }
  });

  it('answers undefined on an empty stream', async () => {
    const stream = await real.newStream('lookup-empty');
    expect(await lookUp(stream, 'solo', 0n)).toEqual({
      message: undefined,
      messagesRead: 0,
      windows: 0,
    });
  });

  describe('with three producers interleaved, ours last 5,000 results ago', () => {
    let stream: string;
    /** Our results: ids 10, 20, .. 500, each followed by two other producers' but the last. */
    const ours = Array.from({ length: 50 }, (_, i) => BigInt(10 * (i + 1)));
    const last = 500n;
    const AFTER = 5_000;
    /** The windows that reach ours, 5,001 offsets back from the end. */
    const reaching = windowsReaching(AFTER + 1);
    /**
     * Older results of a fourth producer before, so that the last of those windows is not cut
     * by the stream's head.
     */
    const HISTORY = reaching.reach;
    const total = HISTORY + 3 * (ours.length - 1) + 1 + AFTER;

    beforeAll(async () => {
      stream = await real.newStream('lookup-three');
      const rounds = ours.slice(0, -1).map((id) => [
        { producer: 'ours', id },
        { producer: 'billing', id },
        { producer: 'audit', id },
      ]);
      // Round by round, so that ours lie where the expectations below count them.
      await publishInTurn(real.rabbit, stream, [
        othersResults(['archive'], HISTORY, 0n),
        ...rounds,
        [{ producer: 'ours', id: last }],
        othersResults(['billing', 'audit'], AFTER, 100_000n),
      ]);
    });

    it('finds our last result reading back from the end only as far as the window holding it', async () => {
      const lookup = await lookUp(stream, 'ours', last);
      expect(lookup.message).toEqual(resultMessages('ours', last)[0]);
      // The windows before the last read whole, the last from its start to ours.
      expect(lookup.windows).toBe(reaching.windows);
      expect(lookup.messagesRead).toBe(
        reaching.reach - reaching.lastSize + (reaching.reach - (AFTER + 1)) + 1,
      );
      expect(lookup.messagesRead).toBeLessThanOrEqual(2 * AFTER + 64);
    });

    it("finds our older result, and no other producer's result under the same id", async () => {
      expect(decoded((await lookUp(stream, 'ours', 450n)).message)).toMatchObject({
        producer: 'ours',
        lastOffset: 450n,
      });
      expect(decoded((await lookUp(stream, 'billing', 450n)).message)).toMatchObject({
        producer: 'billing',
        lastOffset: 450n,
      });
    });

    it('answers undefined for an absent id, stopping at the window holding our result before it', async () => {
      const absent = await lookUp(stream, 'ours', 495n);
      expect(absent.message).toBeUndefined();
      // Our 490 lies at most 3 offsets before our 500, in the same window: read to its end.
      expect(windowsReaching(AFTER + 4).windows).toBe(reaching.windows);
      expect(absent.windows).toBe(reaching.windows);
      expect(absent.messagesRead).toBe(reaching.reach);
      // Below every id of ours nothing earlier stops the search: the whole stream is read.
      const below = await lookUp(stream, 'ours', 5n);
      expect(below.message).toBeUndefined();
      expect(below.windows).toBe(windowsReaching(total).windows);
      expect(below.messagesRead).toBe(total);
    });
  });

  describe("with 'batch' packing", () => {
    it('answers the first part of a batch result, even when the first window starts inside the batch', async () => {
      const stream = await real.newStream('lookup-batch');
      // 5 parts, then 62 other results: the last 64 offsets begin at part 3.
      await publishInTurn(real.rabbit, stream, [
        [{ producer: 'ours', id: 7n, pack: 'batch', outputs: 5 }],
        othersResults(['other'], 62, 100n),
      ]);
      const lookup = await lookUp(stream, 'ours', 7n);
      expect(lookup.message).toEqual(resultMessages('ours', 7n, 'batch', 5)[0]);
      expect(decoded(lookup.message).part).toEqual({ index: 0, of: 5 });
      // The window of 64, then the cut parts 0-2 on their own.
      expect(lookup.windows).toBe(2);
    });

    it('answers the first part of a batch result lying wholly inside a window', async () => {
      const stream = await real.newStream('lookup-batch-whole');
      await publishInTurn(real.rabbit, stream, [
        [{ producer: 'ours', id: 7n, pack: 'batch', outputs: 3 }],
        othersResults(['other'], 1_000, 100n),
      ]);
      const target = real.rabbit.target(stream, { producer: 'ours' });
      try {
        expect(await target.readResult(7n)).toEqual(resultMessages('ours', 7n, 'batch', 3)[0]);
      } finally {
        await target.close();
      }
    });
  });
});
