/**
 * Cutting socket reads into Deliver frames: the FrameAssembler (src/rabbitmq/socket-frames.ts:
 * a frame that spans reads is copied once into a buffer sized from its header) against the
 * router it replaced (pending reads joined with Buffer.concat once enough bytes had come,
 * which also copied the rest of the completing read, and a second time when the size prefix
 * itself was split). Same frames, same 64 KiB reads (a socket's usual read size), interleaved
 * rounds; prints medians, the ratio and the bytes each copied.
 *
 *   npx tsx bench/frame-assembly.ts          BENCH_FRAMES=20000 BENCH_REPEATS=7 to change sizes
 */
import { FrameAssembler } from '../src/rabbitmq/socket-frames.js';
import { interleavedMedians } from './measure.js';

const FRAMES = Number(process.env.BENCH_FRAMES ?? 20_000);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 7);
const READ_BYTES = 64 * 1024;

/** Deliver-sized frames: 500 messages of ~80 bytes is about 42 KB, some larger, some smaller. */
function frames(): Buffer {
  const sizes = Array.from({ length: FRAMES }, (_, i) => 20_000 + ((i * 7919) % 45_000));
  const out = Buffer.alloc(sizes.reduce((sum, size) => sum + 4 + size, 0));
  let at = 0;
  for (const size of sizes) {
    out.writeUInt32BE(size, at);
    out.writeUInt16BE(8, at + 4);
    at += 4 + size;
  }
  return out;
}

const stream = frames();
const reads = Array.from({ length: Math.ceil(stream.length / READ_BYTES) }, (_, i) =>
  stream.subarray(i * READ_BYTES, (i + 1) * READ_BYTES),
);

let copied = { assembler: 0, concat: 0 };
let seen = 0;

function assembler(): void {
  const frames = new FrameAssembler((frame) => {
    seen += frame.readUInt16BE(4);
    if (frame.buffer !== stream.buffer) copied.assembler += frame.length;
  });
  for (const read of reads) frames.push(read);
}

/** The router before: as src/rabbitmq/gaps/consume-raw-chunks.ts had it. */
function concat(): void {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let needed = 4;
  for (let data of reads) {
    if (pending.length > 0) {
      pending.push(data);
      pendingBytes += data.length;
      if (pendingBytes < needed) continue;
      data = Buffer.concat(pending, pendingBytes);
      copied.concat += pendingBytes;
      pending = [];
      pendingBytes = 0;
    }
    let pos = 0;
    while (data.length - pos >= 4) {
      const end = pos + 4 + data.readUInt32BE(pos);
      if (end > data.length) break;
      seen += data.readUInt16BE(pos + 4);
      pos = end;
    }
    if (pos < data.length) {
      const rest = data.subarray(pos);
      pending = [rest];
      pendingBytes = rest.length;
      needed = rest.length >= 4 ? 4 + rest.readUInt32BE(0) : 4;
    }
  }
}

const medians = interleavedMedians({ assembler, concat }, REPEATS);
copied = { assembler: 0, concat: 0 };
seen = 0;
assembler();
concat();
if (seen !== 2 * 8 * FRAMES) throw new Error(`saw ${seen / 8} frames, expected ${2 * FRAMES}`);
const mb = stream.length / 1e6;
console.log(`${FRAMES} frames, ${mb.toFixed(0)} MB in ${reads.length} reads of 64 KiB`);
for (const name of ['assembler', 'concat'] as const) {
  console.log(
    `${name.padEnd(9)} median ${medians[name].toFixed(1)} ms  ${(mb / (medians[name] / 1000)).toFixed(0)} MB/s  ` +
      `copied ${(copied[name] / 1e6).toFixed(0)} MB (${((100 * copied[name]) / stream.length).toFixed(0)}% of the bytes)`,
  );
}
console.log(`concat / assembler time: ${(medians.concat / medians.assembler).toFixed(2)}`);
