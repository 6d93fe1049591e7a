// A job's five writes (test/support/results/job-writes.ts) on the real broker in the chunks a
// running job's pipelined publishes often make: some alone, two sharing one chunk.
import type { ClientParams } from 'rabbitmq-stream-js-client';
import { offsetsOf, type RabbitForTests } from '../brokers/rabbitmq.js';
import { publishInFrames, type Write } from './shared-chunks.js';

/**
 * The writes on a new stream: 1st, 2nd and 5th result alone in a chunk, the 3rd and 4th in
 * one. The broker hands each entry of a Publish frame to the stream's writer on its own, and a
 * busy writer can cut the chunk between them: the layout is then tried again on a new stream
 * (a precondition of the test, not what it checks), at most a few times.
 */
export async function onRabbit(
  real: RabbitForTests,
  params: ClientParams,
  writes: readonly Write[],
): Promise<string> {
  const [w0, w1, w2, w3, w4] = writes as [Write, Write, Write, Write, Write];
  const groups = [[w0], [w1], [w2, w3], [w4]];
  const wanted = groups.map((group) => group.reduce((n, w) => n + w.messages.length, 0));
  const layouts: number[][] = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    const stream = await real.newStream('job-chunks');
    await publishInFrames(params, stream, groups);
    const sizes = await chunkSizes(real, stream);
    if (sizes.join() === wanted.join()) return stream;
    layouts.push(sizes);
  }
  throw new Error(`chunks [${wanted.join()}] never came out; got ${JSON.stringify(layouts)}`);
}

/** Chunk sizes as our source reads them: proves the layout a test means. */
export async function chunkSizes(real: RabbitForTests, stream: string): Promise<number[]> {
  const source = real.rabbit.source(stream);
  const end = await source.endOffset();
  const controller = new AbortController();
  const sizes: number[] = [];
  for await (const chunk of source.read(0n, controller.signal)) {
    sizes.push(offsetsOf([chunk]).length);
    if (chunk.firstOffset + BigInt(chunk.count) >= end) break;
  }
  controller.abort();
  return sizes;
}
