// The RabbitMQ target's readResult told when its result was written at the earliest (the
// source message's chunk timestamp, src/engine/resume/written-after.ts): it reads on from the
// first chunk stamped then (RabbitMQ's timestamp offset spec), so what other producers wrote
// after the result costs nothing; and a bound that is wrong changes only the cost.
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonMessage } from '../../src/index.js';
import { writtenAfter } from '../../src/engine/resume/written-after.js';
import { lookUpResult } from '../../src/rabbitmq/write/result-lookup.js';
import { rabbitForTests } from '../support/brokers/rabbitmq.js';
import { othersResults, publishInTurn, resultMessages } from '../support/results/stored-results.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const TIMEOUT_MS = bound(10_000);
/** Other producers' results stored after ours. */
const AFTER = 10_000;

describe("the RabbitMQ target's readResult from a time bound", () => {
  let source: string;
  let target: string;
  /** The chunk timestamp of the source message our last result covers (offset 0). */
  let sourceStamp: number;
  /** A chunk timestamp well after our last result: where a clock skewed forward would start. */
  let laterStamp: number;

  const lookUp = (id: bigint, writtenAfterMs?: number) =>
    lookUpResult(
      real.rabbit.params,
      target,
      'ours',
      id,
      TIMEOUT_MS,
      {},
      undefined,
      writtenAfterMs === undefined ? {} : { writtenAfterMs: () => Promise.resolve(writtenAfterMs) },
    );

  beforeAll(async () => {
    source = await real.newStream('time-in');
    target = await real.newStream('time-out');
    // What the target held before the job read its source message.
    await publishInTurn(real.rabbit, target, [othersResults(['archive'], 2_000, 0n)]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const producer = real.rabbit.producer(source);
    await producer.send(jsonMessage({ t: 0 }));
    await producer.close();
    sourceStamp = (await real.rabbit.source(source).timestampAt(0n)) as number;
    await publishInTurn(real.rabbit, target, [
      [{ producer: 'ours', id: 10n }],
      [{ producer: 'billing', id: 10n }],
      [{ producer: 'ours', id: 30n }],
      othersResults(['billing', 'audit'], AFTER / 2, 100_000n),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await publishInTurn(real.rabbit, target, [
      othersResults(['billing', 'audit'], AFTER / 2, 200_000n),
    ]);
    // The first 2,000 offsets are the archive's, then ours, billing's, ours: 2,003 is the
    // first of the others after ours; the second half starts 20 ms later than the first.
    const end = await real.rabbit.source(target).endOffset();
    laterStamp = (await real.rabbit.source(target).timestampAt(end - 1n)) as number;
  }, bound(120_000));

  it('reads only what lies between the bound and our result, however much came after', async () => {
    const bounded = await lookUp(30n, sourceStamp);
    expect(bounded.message).toEqual(resultMessages('ours', 30n)[0]);
    expect(bounded.time).toBe('after-time');
    // The stream's last message, then from the first chunk at the bound: ours and billing's.
    expect(bounded.messagesRead).toBeLessThanOrEqual(4);
    const unbounded = await lookUp(30n);
    expect(unbounded.message).toEqual(bounded.message);
    expect(unbounded.messagesRead).toBeGreaterThanOrEqual(AFTER / 2);
  });

  it('answers as without a bound when the bound is wrong, the offset missing, or the result absent', async () => {
    const bounds = [
      undefined,
      sourceStamp,
      // A clock skewed into the future: later than every chunk.
      sourceStamp + 3_600_000,
      // Skewed so that the read starts after our result: in the others' second half.
      laterStamp,
      // Long before anything was written.
      sourceStamp - 86_400_000,
    ];
    for (const id of [30n, 10n, 20n, 999_999n]) {
      const answers = [];
      for (const bound of bounds) answers.push((await lookUp(id, bound)).message);
      const expected = id === 10n || id === 30n ? resultMessages('ours', id)[0] : undefined;
      expect(answers).toEqual(bounds.map(() => expected));
    }
    expect((await lookUp(30n, sourceStamp + 3_600_000)).time).toBe('unusable');
    expect((await lookUp(30n, laterStamp)).time).toBe('before-time');
  });

  it('is told the bound by the source: its chunk timestamp less the margin, none for an offset it does not hold', async () => {
    const reading = real.rabbit.source(source);
    expect(await writtenAfter(reading, 0n).writtenAfterMs?.()).toBeLessThan(sourceStamp);
    expect(await writtenAfter(reading, 1n).writtenAfterMs?.()).toBeUndefined();
    expect(await writtenAfter(reading, 10_000n).writtenAfterMs?.()).toBeUndefined();
    const publisher = real.rabbit.target(target, { producer: 'ours' });
    try {
      for (const id of [30n, 20n]) {
        expect(await publisher.readResult(id, writtenAfter(reading, 1n))).toEqual(
          await publisher.readResult(id, writtenAfter(reading, 0n)),
        );
      }
      expect(await publisher.readResult(30n, writtenAfter(reading, 0n))).toEqual(
        resultMessages('ours', 30n)[0],
      );
    } finally {
      await publisher.close();
    }
  });
});
