// Cutting a socket's byte stream into frames: frames inside one read are views of it, a frame
// that spans reads is copied once into a buffer of its own size, wherever the reads split.
import { describe, expect, it } from 'vitest';
import { FrameAssembler } from '../../../src/rabbitmq/socket-frames.js';

function frame(body: string): Buffer {
  const bytes = Buffer.from(body);
  const out = Buffer.alloc(4 + bytes.length);
  out.writeUInt32BE(bytes.length);
  bytes.copy(out, 4);
  return out;
}

const frames = [frame('first'), frame(''), frame('a longer third frame'), frame('4')];
const stream = Buffer.concat(frames);

function assemble(reads: Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  const assembler = new FrameAssembler((f) => out.push(Buffer.from(f)));
  for (const read of reads) assembler.push(read);
  return out;
}

describe('FrameAssembler', () => {
  it('yields the same frames wherever one or two read boundaries fall', () => {
    for (let a = 0; a <= stream.length; a++) {
      for (let b = a; b <= stream.length; b++) {
        const reads = [stream.subarray(0, a), stream.subarray(a, b), stream.subarray(b)];
        expect(assemble(reads)).toEqual(frames);
      }
    }
  });

  it('yields the same frames when every byte comes in a read of its own', () => {
    const reads = Array.from(stream, (_, i) => stream.subarray(i, i + 1));
    expect(assemble(reads)).toEqual(frames);
  });

  it('hands over frames inside one read as views of it, not copies', () => {
    const seen: Buffer[] = [];
    new FrameAssembler((f) => seen.push(f)).push(stream);
    expect(seen.map((f) => f.buffer === stream.buffer)).toEqual([true, true, true, true]);
  });

  it('copies a frame that spans reads into one buffer of exactly its size', () => {
    // Larger than Buffer's pool, so that its buffer is its own: its size is what was allocated.
    const big = frame('x'.repeat(10_000));
    const reads = Buffer.concat([frames[0] as Buffer, big, frames[3] as Buffer]);
    const start = (frames[0] as Buffer).length;
    const seen: Buffer[] = [];
    const assembler = new FrameAssembler((f) => seen.push(f));
    // the size prefix itself split, then the body in two more reads, then the last frame
    assembler.push(reads.subarray(0, start + 2));
    assembler.push(reads.subarray(start + 2, start + 5_000));
    assembler.push(reads.subarray(start + 5_000));

    const spanning = seen[1] as Buffer;
    expect(spanning).toEqual(big);
    expect(spanning.buffer === reads.buffer).toBe(false);
    expect(spanning.buffer.byteLength).toBe(big.length);
    expect((seen[2] as Buffer).buffer === reads.buffer).toBe(true);
  });

  it('gives back the bytes of an unfinished frame, and then starts afresh', () => {
    const out: Buffer[] = [];
    const assembler = new FrameAssembler((f) => out.push(Buffer.from(f)));
    assembler.push(stream.subarray(0, 7));
    expect(assembler.takeRest()).toEqual(stream.subarray(0, 7));
    assembler.push(frames[3] as Buffer);
    expect(out).toEqual([frames[3]]);
  });
});
