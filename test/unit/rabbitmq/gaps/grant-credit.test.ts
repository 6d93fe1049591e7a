// src/rabbitmq/gaps/grant-credit.ts writes the Credit frame to the socket itself, instead of
// the stock client's send() (a zero-filled 64 KiB buffer and a util.inspect per frame), and
// only one per turn of the event loop for all the credit granted during it (or at once when
// half the subscription's credit is held).
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { describe, expect, it } from 'vitest';
import { CreditGrants } from '../../../../src/rabbitmq/gaps/grant-credit.js';

function connectionWith(readyState: string): { connection: Connection; written: Buffer[] } {
  const written: Buffer[] = [];
  const socket = {
    readyState,
    listeners: () => [],
    write: (data: Buffer) => written.push(Buffer.from(data)),
  };
  return { connection: { socket } as unknown as Connection, written };
}

const turnEnd = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('granting credit', () => {
  it('writes one Credit frame: size 7, key 0x0009, version 1, subscription id, credit', async () => {
    const { connection, written } = connectionWith('open');

    new CreditGrants(connection, 3, 0xffff, () => true).grant(0x0102);
    await turnEnd();

    expect(written).toEqual([Buffer.from([0, 0, 0, 7, 0, 9, 0, 1, 3, 1, 2])]);
  });

  it('grants the credit of one turn in one frame at its end, and the next turn’s in the next', async () => {
    const { connection, written } = connectionWith('open');
    const grants = new CreditGrants(connection, 0, 100, () => true);

    grants.grant(1);
    grants.grant(1);
    await Promise.resolve(); // a continuation in the same turn, as a reader taking the next chunk
    grants.grant(3);
    expect(written).toEqual([]);
    await turnEnd();
    expect(written.map((frame) => frame.readUInt16BE(9))).toEqual([5]);

    grants.grant(2);
    await turnEnd();
    expect(written.map((frame) => frame.readUInt16BE(9))).toEqual([5, 2]);
  });

  it('writes at once, without waiting for the turn to end, once half the credit is held', async () => {
    const { connection, written } = connectionWith('open');
    const grants = new CreditGrants(connection, 0, 8, () => true);

    for (let chunk = 0; chunk < 9; chunk++) grants.grant(1); // one long turn taking 9 chunks
    expect(written.map((frame) => frame.readUInt16BE(9))).toEqual([4, 4]);
    await turnEnd();
    expect(written.map((frame) => frame.readUInt16BE(9))).toEqual([4, 4, 1]);
  });

  it('grants each chunk at once with a credit of 1, as the broker has nothing else to send', () => {
    const { connection, written } = connectionWith('open');
    const grants = new CreditGrants(connection, 0, 1, () => true);

    grants.grant(1);
    grants.grant(1);

    expect(written.map((frame) => frame.readUInt16BE(9))).toEqual([1, 1]);
  });

  it('splits credit over the uint16 limit across frames', () => {
    const { connection, written } = connectionWith('open');
    const grants = new CreditGrants(connection, 0, 0xffff, () => true);

    grants.grant(30_000);
    grants.grant(40_000);

    expect(written.map((frame) => frame.readUInt16BE(9))).toEqual([0xffff, 70_000 - 0xffff]);
  });

  it('writes nothing when the subscription stopped granting before the turn ended', async () => {
    const { connection, written } = connectionWith('open');
    let granting = true;
    const grants = new CreditGrants(connection, 0, 8, () => granting);

    grants.grant(1);
    granting = false;
    await turnEnd();

    expect(written).toEqual([]);
  });

  it('writes nothing on a socket that is no longer open, as the client does', async () => {
    const { connection, written } = connectionWith('closed');

    new CreditGrants(connection, 0, 8, () => true).grant(1);
    await turnEnd();

    expect(written).toEqual([]);
  });
});
