// The frame router of src/rabbitmq/gaps/consume-raw-chunks.ts takes Deliver and ConsumerUpdate
// frames from the socket, in the order they came, before the stock client's decoder sees them;
// every other frame still goes to the client.
import { EventEmitter } from 'node:events';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { describe, expect, it } from 'vitest';
import { StreamWindowsError } from '../../../../src/common/errors.js';
import { routeDeliverFrames } from '../../../../src/rabbitmq/gaps/consume-raw-chunks.js';
import { parseConsumerUpdate } from '../../../../src/rabbitmq/gaps/consumer-update.js';

/** A frame with its size prefix: key, version, then `body`. */
function frame(key: number, body: number[]): Buffer {
  const bytes = Buffer.alloc(4 + 4 + body.length);
  bytes.writeUInt32BE(bytes.length - 4, 0);
  bytes.writeUInt16BE(key, 4);
  bytes.writeUInt16BE(1, 6);
  Buffer.from(body).copy(bytes, 8);
  return bytes;
}

const consumerUpdate = (correlationId: number, active: number): Buffer =>
  frame(0x001a, [0, 0, 0, correlationId, 0, active]);

describe('the consumer frame router', () => {
  it('hands Deliver and ConsumerUpdate frames over in socket order and passes the others to the client', () => {
    const socket = Object.assign(new EventEmitter(), { setNoDelay: () => undefined });
    const toClient: Buffer[] = [];
    socket.on('data', (data: Buffer) => toClient.push(data));
    const seen: string[] = [];
    routeDeliverFrames(
      { socket } as unknown as Connection,
      {
        deliver: (deliver) => seen.push(`deliver ${deliver.readUInt8(4)}`),
        consumerUpdate: (update) => seen.push(`update ${update.correlationId} ${update.active}`),
      },
      (error) => seen.push(`error ${String(error)}`),
    );
    const credit = frame(0x8009, [0, 0x11, 0]); // a Credit response: the client's to decode

    // One socket read: a chunk, a step-down, a credit response, a chunk, an activation.
    socket.emit(
      'data',
      Buffer.concat([
        frame(0x0008, [7]),
        consumerUpdate(3, 0),
        credit,
        frame(0x0008, [8]),
        consumerUpdate(4, 1),
      ]),
    );

    expect(seen).toEqual(['deliver 7', 'update 3 false', 'deliver 8', 'update 4 true']);
    expect(toClient).toEqual([credit]);
  });

  it('refuses a ConsumerUpdate frame too short to hold its fields', () => {
    const truncated = consumerUpdate(1, 1).subarray(4, 12);

    expect(() => parseConsumerUpdate(truncated)).toThrow(StreamWindowsError);
    expect(() => parseConsumerUpdate(truncated)).toThrow(
      /malformed ConsumerUpdate frame \(8 bytes\)/,
    );
  });
});
