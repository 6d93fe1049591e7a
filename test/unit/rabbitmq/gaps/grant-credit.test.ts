// src/rabbitmq/gaps/grant-credit.ts writes the Credit frame to the socket itself, instead of
// the stock client's send() (a zero-filled 64 KiB buffer and a util.inspect per frame).
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { describe, expect, it } from 'vitest';
import { grantCredit } from '../../../../src/rabbitmq/gaps/grant-credit.js';

function connectionWith(readyState: string): { connection: Connection; written: Buffer[] } {
  const written: Buffer[] = [];
  const socket = {
    readyState,
    listeners: () => [],
    write: (data: Buffer) => written.push(Buffer.from(data)),
  };
  return { connection: { socket } as unknown as Connection, written };
}

describe('granting credit', () => {
  it('writes one Credit frame: size 7, key 0x0009, version 1, subscription id, credit', () => {
    const { connection, written } = connectionWith('open');

    grantCredit(connection, 3, 0x0102);

    expect(written).toEqual([Buffer.from([0, 0, 0, 7, 0, 9, 0, 1, 3, 1, 2])]);
  });

  it('writes nothing on a socket that is no longer open, as the client does', () => {
    const { connection, written } = connectionWith('closed');

    grantCredit(connection, 0, 1);

    expect(written).toEqual([]);
  });
});
