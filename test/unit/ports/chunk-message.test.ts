import { describe, expect, it } from 'vitest';
import { messageAt } from '../../../src/ports/chunk-message.js';
import type { SourceChunk } from '../../../src/ports/ports.js';

describe('a message taken out of its chunk', () => {
  it('is a copy, not a view, even when the chunk is a Buffer (a RabbitMQ Deliver frame)', () => {
    const frame = Buffer.from([9, 9, 1, 2, 3, 9]);
    const chunk: SourceChunk = {
      firstOffset: 0n,
      timestamp: 0,
      count: 1,
      bytes: frame,
      starts: Uint32Array.of(2),
      ends: Uint32Array.of(5),
    };
    const message = messageAt(chunk, 0);
    expect([...message]).toEqual([1, 2, 3]);
    // A view would share (and keep alive) the frame's memory.
    expect(message.buffer).not.toBe(frame.buffer);
    frame[2] = 7;
    expect(message[0]).toBe(1);
  });
});
