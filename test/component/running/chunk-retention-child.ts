// Run with `node --expose-gc --import tsx`: a job reads CHUNKS chunks of its open window while
// the one result before them awaits a confirm that comes only at the end, then prints (one
// JSON line) how many of those chunks are still reachable after a collection. The runner
// races each wait for a chunk against a failed write; nothing of a chunk it processed should
// stay reachable from that race.
import { setImmediate as tick } from 'node:timers/promises';
import { aggregate, jsonMessage, type Source, type SourceChunk } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';

const CHUNKS = 400;
const HOUR = 3_600_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

const alive: WeakRef<SourceChunk>[] = [];

/** One message per chunk, each chunk a fresh 64 KiB buffer: offset 0 in the first hour, the rest in the second. */
function chunkAt(offset: number): SourceChunk {
  const message = jsonMessage({ v: 1 }, { creationTime: offset === 0 ? 0 : HOUR });
  const bytes = new Uint8Array(64 * 1024);
  bytes.set(message);
  return {
    firstOffset: BigInt(offset),
    timestamp: 0,
    count: 1,
    bytes,
    starts: Uint32Array.of(0),
    ends: Uint32Array.of(message.length),
  };
}

const source: Source = {
  stream: 'source',
  endOffset: () => Promise.resolve(BigInt(CHUNKS + 1)),
  async *read(_from, signal) {
    for (let offset = 0; offset <= CHUNKS && !signal.aborted; offset++) {
      const chunk = chunkAt(offset);
      if (offset > 0) alive.push(new WeakRef(chunk));
      yield chunk;
      await tick();
    }
  },
};

const broker = new MemoryBroker();
broker.createStream('target');
let release = (): void => undefined;
const held = new Promise<void>((resolve) => (release = resolve));
const target = broker.target('target', { producer: 'p' });
const job = aggregate(source)
  .tumbling('1h')
  .reduce((n: number) => n + 1, 0)
  .to(
    {
      ...forwarding(target),
      publish: async (id, messages) => {
        await held; // the first hour's result: confirmed once every chunk was read
        await target.publish(id, messages);
      },
    },
    { retryDelayMs: 0 },
  );
const stop = new AbortController();
let read = 0;
job.on('read', () => {
  if (++read === CHUNKS + 1) {
    void (async () => {
      await tick();
      gc();
      await tick();
      gc();
      const reachable = alive.slice(0, -2).filter((ref) => ref.deref() !== undefined).length;
      process.stdout.write(`${JSON.stringify({ chunks: CHUNKS, reachable })}\n`);
      release();
      stop.abort();
    })();
  }
});
await job.run({ signal: stop.signal });
