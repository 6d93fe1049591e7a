// A reader's node that goes silent (a frozen node: the connection stays open, nothing comes)
// is noticed within the source's stallTimeoutMs, and the read goes on from its next offset on
// a new connection; a quiet stream, whose node answers the probe, is never taken as stalled.
// The silent node is a TCP proxy that stops forwarding (the cluster test freezes a real node).
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import { jsonMessage, type SourceChunk } from '../../src/index.js';
import { parseStreamUrl, rabbitSource } from '../../src/rabbitmq/index.js';
import { keepingLogger, type KeepingLogger } from '../support/doubles/keeping-logger.js';
import { offsetsOf, publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { startProxy } from '../support/brokers/tcp-proxy.js';

const url = inject('rabbitmqUrl');
const real = rabbitForTests();

const STALL_TIMEOUT_MS = 1_500;
/** Room for a new connection and subscription on a busy 2-core machine. */
const RESUBSCRIBE_SLACK_MS = 3_000;

const messages = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => jsonMessage({ i: from + i }));

/** The next chunk of `chunks`, or an error once `ms` passed without one. */
async function nextWithin(chunks: AsyncIterator<SourceChunk>, ms: number): Promise<SourceChunk> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no chunk within ${ms} ms`)), ms);
  });
  try {
    const next = await Promise.race([chunks.next(), late]);
    if (next.done === true) throw new Error('the read ended');
    return next.value;
  } finally {
    clearTimeout(timer);
  }
}

const retries = (logger: KeepingLogger) => logger.lines.filter(([level]) => level === 'warn');

describe('a source whose node goes silent', () => {
  it('should read on from its next offset on a new connection within stallTimeoutMs', async () => {
    const stream = await real.newStream('stall');
    await publishAll(real.rabbit, stream, messages(0, 1));
    const proxy = await startProxy(parseStreamUrl(url));
    const logger = keepingLogger();
    const source = rabbitSource(stream, {
      connection: { ...parseStreamUrl(url), port: proxy.port },
      stallTimeoutMs: STALL_TIMEOUT_MS,
      logger,
    });
    const abort = new AbortController();
    const chunks = source.read(0n, abort.signal)[Symbol.asyncIterator]();
    try {
      expect(offsetsOf([await nextWithin(chunks, 10_000)])).toEqual([0n]);
      proxy.freeze(); // the reader's connection: open, and silent from now on
      const frozenAt = Date.now();
      await publishAll(real.rabbit, stream, messages(1, 1));
      const next = await nextWithin(chunks, STALL_TIMEOUT_MS * 1.1 + RESUBSCRIBE_SLACK_MS);
      expect(Date.now() - frozenAt).toBeGreaterThanOrEqual(STALL_TIMEOUT_MS / 2);
      expect(offsetsOf([next])).toEqual([1n]);
      const [warning] = retries(logger);
      expect(String((warning?.[1] as { cause?: string }).cause)).toMatch(
        /sent nothing for \d+ ms, not even an answer to a probe \(stallTimeoutMs: 1500\)/,
      );
    } finally {
      abort.abort();
      await chunks.return?.();
      await proxy.close();
    }
  });

  it('should not take a quiet stream for a stalled one: its node answers the probe', async () => {
    const stream = await real.newStream('stall-quiet');
    await publishAll(real.rabbit, stream, messages(0, 1));
    const logger = keepingLogger();
    const source = rabbitSource(stream, {
      connection: parseStreamUrl(url),
      stallTimeoutMs: STALL_TIMEOUT_MS,
      logger,
    });
    const abort = new AbortController();
    const chunks = source.read(0n, abort.signal)[Symbol.asyncIterator]();
    try {
      expect(offsetsOf([await nextWithin(chunks, 10_000)])).toEqual([0n]);
      await sleep(4 * STALL_TIMEOUT_MS); // nothing to read meanwhile
      await publishAll(real.rabbit, stream, messages(1, 1));
      expect(offsetsOf([await nextWithin(chunks, 10_000)])).toEqual([1n]);
      expect(retries(logger)).toEqual([]);
      const reads = logger.lines.filter(([, , message]) => message.startsWith('reading '));
      expect(reads, 'one subscription all along').toHaveLength(1);
    } finally {
      abort.abort();
      await chunks.return?.();
    }
  });
});
