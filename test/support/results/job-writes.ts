// A job's writes for a packing (or a user `encode`), computed on the embedded broker: five
// one-minute windows of keys a, b, c, so five results of three outputs, for tests that put
// them on the real broker and read them with other clients.
import { aggregate, type TargetOptions } from '../../../src/index.js';
import { brokerWithReadings, reading, type Reading } from '../jobs/memory-job.js';
import type { Write } from './shared-chunks.js';

/** Eighteen readings: minute m holds readings 3m, 3m+1, 3m+2 of keys a, b, c. */
const readings = Array.from({ length: 18 }, (_, i) => reading('abc'[i % 3] as string, i, 20 * i));

/** The last offset of each of the five results (their publishing ids are `lastWriteId`'s). */
export const LAST_OFFSETS = ['2', '5', '8', '11', '14'];

/** The job's writes with these target options, in publishing order. */
export async function jobWrites(options: TargetOptions<number>): Promise<Write[]> {
  const broker = brokerWithReadings(readings);
  await aggregate<Reading>(broker.source('source'))
    .tumbling('1m')
    .key((r) => r.sensor)
    .reduce((total, r) => total + r.value, 0)
    .to(broker.target('target', { producer: 'p' }), options)
    .run({ untilCaughtUp: true });
  return broker.chunks('target').map((chunk) => ({
    publishingId: chunk.writer?.publishingId ?? -1n,
    messages: chunk.messages.map((m) => m.bytes),
  }));
}
