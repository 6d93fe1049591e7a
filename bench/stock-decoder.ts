import { createRequire } from 'node:module';
import type { SourceChunk } from '../src/ports/ports.js';

/**
 * The stock client's decoder of delivered messages (rabbitmq-stream-js-client 1.0.0,
 * dist/response_decoder.js). Its per-message `decodeMessage` is not exported, so the bench
 * feeds its `ResponseDecoder` whole Deliver frames, exactly as the client's socket does, and
 * counts the messages it emits.
 */
interface StockMessage {
  readonly content: Buffer;
}
interface StockDecoder {
  add(data: Buffer, getCompressionBy: () => never): void;
  on(event: 'deliverV1', listener: (response: { messages: StockMessage[] }) => void): void;
}
type StockDecoderClass = new (listener: () => void, logger: object) => StockDecoder;

const require = createRequire(import.meta.url);
const { ResponseDecoder } = require('rabbitmq-stream-js-client/dist/response_decoder.js') as {
  ResponseDecoder: StockDecoderClass;
};
const { NullLogger } = require('rabbitmq-stream-js-client/dist/logger.js') as {
  NullLogger: new () => object;
};

const DELIVER_KEY = 8;
const CHUNK_HEADER_BYTES = 48;

/**
 * A version-1 Deliver frame (size prefix included) carrying `chunk` as one osiris chunk of
 * simple entries; layout as in src/rabbitmq/read/deliver-chunk.ts.
 */
export function deliverFrame(chunk: SourceChunk): Buffer {
  let data = 0;
  for (let i = 0; i < chunk.count; i++) {
    data += 4 + (chunk.ends[i] as number) - (chunk.starts[i] as number);
  }
  const frame = Buffer.alloc(4 + 2 + 2 + 1 + CHUNK_HEADER_BYTES + data);
  let at = frame.writeUInt32BE(frame.length - 4, 0);
  at = frame.writeUInt16BE(DELIVER_KEY, at);
  at = frame.writeUInt16BE(1, at);
  at = frame.writeUInt8(0, at); // subscription id
  at = frame.writeUInt8(0x50, at); // magic 5, chunk version 0
  at = frame.writeUInt8(0, at); // user chunk
  at = frame.writeUInt16BE(chunk.count, at);
  at = frame.writeUInt32BE(chunk.count, at);
  at = frame.writeBigInt64BE(BigInt(chunk.timestamp), at);
  at = frame.writeBigUInt64BE(0n, at); // epoch
  at = frame.writeBigUInt64BE(chunk.firstOffset, at);
  at = frame.writeInt32BE(0, at); // crc, not checked by the client
  at = frame.writeUInt32BE(data, at);
  at = frame.writeUInt32BE(0, at); // trailer length
  at = frame.writeUInt32BE(0, at); // bloom size + reserved
  for (let i = 0; i < chunk.count; i++) {
    const message = chunk.bytes.subarray(chunk.starts[i], chunk.ends[i]);
    at = frame.writeUInt32BE(message.length, at);
    frame.set(message, at);
    at += message.length;
  }
  return frame;
}

/** A decoder that counts delivered messages and keeps the last one, for checks. */
export function stockDecoder(): {
  decode(frame: Buffer): void;
  readonly delivered: number;
  readonly last: StockMessage | undefined;
} {
  const decoder = new ResponseDecoder(() => undefined, new NullLogger());
  const state = { delivered: 0, last: undefined as StockMessage | undefined };
  decoder.on('deliverV1', (response) => {
    state.delivered += response.messages.length;
    state.last = response.messages[response.messages.length - 1];
  });
  return {
    decode: (frame) =>
      decoder.add(frame, () => {
        throw new Error('the bench frames are not compressed');
      }),
    get delivered() {
      return state.delivered;
    },
    get last() {
      return state.last;
    },
  };
}
