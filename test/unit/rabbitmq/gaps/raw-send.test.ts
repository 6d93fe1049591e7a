// src/rabbitmq/gaps/raw-publish.ts writes a finished Publish frame to the client connection's
// socket itself: the stock client's send() formats every frame it writes for a debug line,
// whatever the log level (util.inspect of the frame as an array of numbers).
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import type { Request } from 'rabbitmq-stream-js-client/dist/requests/request.js';
import { describe, expect, it, vi } from 'vitest';
import { sendFrame } from '../../../../src/rabbitmq/gaps/raw-publish.js';

/** A frame that counts how often it is turned into JSON (what util.inspect of it needs). */
function frameCountingJson(): { frame: Buffer; toJson: ReturnType<typeof vi.fn> } {
  const frame = Buffer.from([0, 0, 0, 5, 0, 2, 0, 1, 9]);
  const toJson = vi.fn(() => ({ type: 'Buffer', data: [...frame] }));
  Object.defineProperty(frame, 'toJSON', { value: toJson });
  return { frame, toJson };
}

function socketWith(readyState: string, error?: Error) {
  const written: Buffer[] = [];
  const socket = {
    readyState,
    listeners: () => [],
    write: (data: Buffer, done: (error?: Error) => void) => {
      written.push(data);
      process.nextTick(() => {
        done(error);
      });
      return true;
    },
  };
  return { socket, written };
}

describe('the stock connection.send of rabbitmq-stream-js-client 1.0.0 (raw-publish.ts)', () => {
  it('formats the whole frame for a debug line even when debug logging is off', async () => {
    const { frame, toJson } = frameCountingJson();
    const { socket } = socketWith('open');
    const connection = {
      socket,
      logger: { debug: () => undefined },
      getBufferSizeParams: () => ({}),
    };
    const request = { key: 2, version: 1, responseKey: -1, toBuffer: () => frame } as Request;

    await Connection.prototype.send.call(connection, request);

    expect(toJson).toHaveBeenCalled();
  });
});

describe('sendFrame', () => {
  it('writes the frame to the socket as it is, once, without formatting it', async () => {
    const { frame, toJson } = frameCountingJson();
    const { socket, written } = socketWith('open');

    await sendFrame({ socket } as unknown as Connection, frame);

    expect(written).toEqual([frame]);
    expect(written[0]).toBe(frame);
    expect(toJson).not.toHaveBeenCalled();
  });

  it('rejects with the error of a write the socket did not take', async () => {
    const { socket } = socketWith('open', new Error('EPIPE'));

    await expect(sendFrame({ socket } as unknown as Connection, Buffer.from([1]))).rejects.toThrow(
      'EPIPE',
    );
  });

  it('writes nothing on a socket that is no longer open, as the client does', async () => {
    const { socket, written } = socketWith('closed');
    let settled = false;

    void sendFrame({ socket } as unknown as Connection, Buffer.from([1])).finally(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));

    expect(written).toEqual([]);
    expect(settled).toBe(false);
  });
});
