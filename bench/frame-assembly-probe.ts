/**
 * Cutting socket reads into Deliver frames, two ways. Run by frame-assembly.ts in a child
 * process: in the bench's own process, after the hot-path cases, V8 ran a full collection
 * every few rounds' worth of frames (136 mark-compacts against 5 in a fresh process, and 4x
 * the time), so the figures measured the collector's state rather than the routers.
 *
 * Method: `frames` Deliver-sized frames in one buffer, cut into 64 KiB reads (a socket's
 * usual read size), go through the FrameAssembler (src/rabbitmq/socket-frames.ts) and the
 * Buffer.concat router it replaced, in interleaved rounds (medians over `repeats` after a
 * warm-up). Before timing, both must hand over every frame whole and in order; the bytes
 * each copied out of the reads are counted in that check run.
 */
import { FrameAssembler } from '../src/rabbitmq/socket-frames.js';
import { replyToParent } from './child.js';
import type { FrameAssemblyProbe } from './frame-assembly.js';
import { interleavedTimes } from './measure.js';

/** A socket's usual read size. */
const READ_BYTES = 64 * 1024;
const SIZE_PREFIX = 4;

/** What a router handed over: counted inside the timed rounds, checked once before them. */
interface Tally {
  frames: number;
  bytes: number;
  /** Frames not whole (length other than their prefix says) or out of order. */
  wrong: number;
  /** Bytes the router copied out of the socket reads. */
  copied: number;
}

const frameCount = Number(process.argv[2]);
const repeats = Number(process.argv[3]);
const stream = frames(frameCount);
const reads = Array.from({ length: Math.ceil(stream.length / READ_BYTES) }, (_, i) =>
  stream.subarray(i * READ_BYTES, (i + 1) * READ_BYTES),
);
const routers = {
  assembler: () => assemble(reads, stream),
  concat: () => concatRoute(reads),
};
const tallies = { assembler: routers.assembler(), concat: routers.concat() };
for (const [name, tally] of Object.entries(tallies)) {
  if (tally.frames !== frameCount || tally.bytes !== stream.length || tally.wrong !== 0) {
    throw new Error(
      `frame-assembly bench: ${name} handed over ${tally.frames} frames (${tally.wrong} wrong), ` +
        `${tally.bytes} bytes; expected ${frameCount} frames, ${stream.length} bytes`,
    );
  }
}
const probe: FrameAssemblyProbe = {
  frames: frameCount,
  bytes: stream.length,
  roundsMs: interleavedTimes(routers, repeats),
  copiedBytes: { assembler: tallies.assembler.copied, concat: tallies.concat.copied },
};
replyToParent(probe);

/**
 * Deliver-sized frames (500 messages of ~80 bytes is about 42 KB; here 20–65 KB) in one
 * buffer, each carrying its index after the command key so that order can be checked.
 */
function frames(count: number): Buffer {
  const sizes = Array.from({ length: count }, (_, i) => 20_000 + ((i * 7919) % 45_000));
  const out = Buffer.alloc(sizes.reduce((sum, size) => sum + SIZE_PREFIX + size, 0));
  let at = 0;
  sizes.forEach((size, index) => {
    out.writeUInt32BE(size, at);
    out.writeUInt16BE(8, at + 4); // Deliver
    out.writeUInt32BE(index, at + 6);
    at += SIZE_PREFIX + size;
  });
  return out;
}

function count(tally: Tally, frame: Buffer): void {
  if (
    frame.length !== SIZE_PREFIX + frame.readUInt32BE(0) ||
    frame.readUInt32BE(6) !== tally.frames
  ) {
    tally.wrong++;
  }
  tally.frames++;
  tally.bytes += frame.length;
}

function assemble(reads: readonly Buffer[], stream: Buffer): Tally {
  const tally: Tally = { frames: 0, bytes: 0, wrong: 0, copied: 0 };
  const assembler = new FrameAssembler((frame) => {
    count(tally, frame);
    // A view of a read shares the stream's memory; an assembled frame has its own.
    if (frame.buffer !== stream.buffer) tally.copied += frame.length;
  });
  for (const read of reads) assembler.push(read);
  return tally;
}

/** The router before, as src/rabbitmq/gaps/consume-raw-chunks.ts had it until 5bf68f9. */
function concatRoute(reads: readonly Buffer[]): Tally {
  const tally: Tally = { frames: 0, bytes: 0, wrong: 0, copied: 0 };
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let needed = SIZE_PREFIX;
  for (let data of reads) {
    if (pending.length > 0) {
      pending.push(data);
      pendingBytes += data.length;
      if (pendingBytes < needed) continue;
      data = Buffer.concat(pending, pendingBytes);
      tally.copied += pendingBytes;
      pending = [];
      pendingBytes = 0;
    }
    let pos = 0;
    while (data.length - pos >= SIZE_PREFIX) {
      const end = pos + SIZE_PREFIX + data.readUInt32BE(pos);
      if (end > data.length) break;
      count(tally, data.subarray(pos, end));
      pos = end;
    }
    if (pos < data.length) {
      const rest = data.subarray(pos);
      pending = [rest];
      pendingBytes = rest.length;
      needed = rest.length >= SIZE_PREFIX ? SIZE_PREFIX + rest.readUInt32BE(0) : SIZE_PREFIX;
    }
  }
  return tally;
}
