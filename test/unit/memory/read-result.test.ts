// The embedded broker's Target.readResult: the producer's result stored under an id, looked
// for at its latest write (the log's hint), then searched backward from the stream's end.
import { describe, expect, it, vi } from 'vitest';
import { decodeResult, jsonMessage } from '../../../src/index.js';
import { MemoryBroker, StreamNotFoundError } from '../../../src/memory/index.js';
import { StreamLog } from '../../../src/memory/stream-log.js';
import {
  othersResults,
  publishResults,
  resultMessages,
} from '../../support/results/stored-results.js';

/** The decoded result; fails the test when there is none. */
function decoded(message: Uint8Array | undefined) {
  if (message === undefined) throw new Error('no result found');
  return decodeResult(message);
}

function brokerWithTarget(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('results');
  return broker;
}

const targetOf = (broker: MemoryBroker) => (producer: string) =>
  broker.target('results', { producer });

describe("the embedded broker's readResult", () => {
  it("answers the producer's result under the id, the whole message as published, among other producers' results", async () => {
    const broker = brokerWithTarget();
    await publishResults(
      [
        { producer: 'ours', id: 5n },
        ...othersResults(['a', 'b'], 10, 5n),
        { producer: 'ours', id: 9n },
        ...othersResults(['a', 'b'], 300, 20n),
      ],
      targetOf(broker),
    );
    const ours = broker.target('results', { producer: 'ours' });
    expect(await ours.readResult(9n)).toEqual(resultMessages('ours', 9n)[0]);
    expect(await ours.readResult(5n)).toEqual(resultMessages('ours', 5n)[0]);
    // Another producer's result under the same id is not ours.
    expect(decoded(await broker.target('results', { producer: 'a' }).readResult(9n))).toMatchObject(
      { producer: 'a', lastOffset: 9n },
    );
  });

  it('answers undefined for an id the producer never published, before, between or after its results', async () => {
    const broker = brokerWithTarget();
    await publishResults(
      [
        { producer: 'ours', id: 5n },
        { producer: 'other', id: 7n },
        { producer: 'ours', id: 9n },
      ],
      targetOf(broker),
    );
    const ours = broker.target('results', { producer: 'ours' });
    for (const id of [0n, 4n, 7n, 8n, 10n]) expect(await ours.readResult(id)).toBeUndefined();
    expect(await broker.target('results', { producer: 'nobody' }).readResult(5n)).toBeUndefined();
  });

  it('answers, from any time bound, what it answers without one', async () => {
    let clock = 1_000;
    const broker = new MemoryBroker({ now: () => (clock += 10) });
    broker.createStream('results');
    await publishResults(
      [
        ...othersResults(['a', 'b'], 20, 0n),
        { producer: 'ours', id: 5n, pack: 'batch', outputs: 3 },
        ...othersResults(['a', 'b'], 20, 100n),
        { producer: 'ours', id: 9n },
        ...othersResults(['a', 'b'], 20, 200n),
      ],
      targetOf(broker),
    );
    const ours = broker.target('results', { producer: 'ours' });
    // Before every chunk, at each write, between two, and later than every chunk.
    const bounds = [0, ...Array.from({ length: 64 }, (_, i) => 1_000 + 5 * i), clock + 1];
    for (const id of [0n, 4n, 5n, 7n, 9n, 10n]) {
      const plain = await ours.readResult(id);
      for (const writtenAfterMs of bounds) {
        const where = { writtenAfterMs: () => Promise.resolve(writtenAfterMs) };
        expect(await ours.readResult(id, where)).toEqual(plain);
      }
    }
  });

  it("answers a 'batch' result's first part", async () => {
    const broker = brokerWithTarget();
    await publishResults(
      [
        { producer: 'ours', id: 3n, pack: 'batch', outputs: 4 },
        ...othersResults(['other'], 5, 10n),
      ],
      targetOf(broker),
    );
    const found = await broker.target('results', { producer: 'ours' }).readResult(3n);
    expect(found).toEqual(resultMessages('ours', 3n, 'batch', 4)[0]);
    expect(decoded(found).part).toEqual({ index: 0, of: 4 });
  });

  it('skips messages that are no AMQP 1.0 messages and messages that are no results', async () => {
    const broker = brokerWithTarget();
    await publishResults([{ producer: 'ours', id: 2n }], targetOf(broker));
    broker.append('results', [new TextEncoder().encode('not amqp'), jsonMessage({ a: 1 })]);
    expect(await broker.target('results', { producer: 'ours' }).readResult(2n)).toEqual(
      resultMessages('ours', 2n)[0],
    );
  });

  it('answers undefined for a result retention removed', async () => {
    const broker = brokerWithTarget();
    await publishResults(
      [
        { producer: 'ours', id: 1n },
        { producer: 'ours', id: 2n },
      ],
      targetOf(broker),
    );
    broker.truncate('results', 1n);
    const ours = broker.target('results', { producer: 'ours' });
    expect(await ours.readResult(1n)).toBeUndefined();
    expect(await ours.readResult(2n)).toEqual(resultMessages('ours', 2n)[0]);
  });

  it("reads the producer's last result at its latest write, searching none of what others wrote after it", async () => {
    const broker = brokerWithTarget();
    await publishResults(
      [
        { producer: 'ours', id: 5n },
        { producer: 'ours', id: 9n },
        ...othersResults(['a', 'b'], 1_000, 20n),
      ],
      targetOf(broker),
    );
    const searched = vi.spyOn(StreamLog.prototype, 'chunks', 'get');
    try {
      const ours = broker.target('results', { producer: 'ours' });
      expect(await ours.readResult(9n)).toEqual(resultMessages('ours', 9n)[0]);
      expect(searched).not.toHaveBeenCalled();
      // Any other id is searched for, and found, as before.
      expect(await ours.readResult(5n)).toEqual(resultMessages('ours', 5n)[0]);
      expect(searched).toHaveBeenCalled();
      // Retention removed the latest write: searched for, and not found.
      broker.truncate('results', 2n);
      expect(await ours.readResult(9n)).toBeUndefined();
    } finally {
      searched.mockRestore();
    }
  });

  it('fails with StreamNotFoundError once the stream is deleted', async () => {
    const broker = brokerWithTarget();
    const ours = broker.target('results', { producer: 'ours' });
    broker.deleteStream('results');
    await expect(ours.readResult(1n)).rejects.toBeInstanceOf(StreamNotFoundError);
  });
});
