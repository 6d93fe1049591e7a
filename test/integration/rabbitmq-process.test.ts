// What a process using the RabbitMQ adapter can rely on: it exits by itself after close(),
// also after reconnecting; an attempt given up on leaves no connection behind; and a broker
// that refuses the user, password or vhost gives a typed error, not an uncaught exception.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { decodeResult, isRetriable, jsonMessage, SourceError } from '../../src/index.js';
import { parseStreamUrl, rabbitSource } from '../../src/rabbitmq/index.js';
import { streamStats } from '../../src/rabbitmq/read/stream-stats.js';
import { startBlackHole } from '../support/brokers/black-hole.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { freePort, startProxy } from '../support/brokers/tcp-proxy.js';
import { bound } from '../support/timing.js';

const url = inject('rabbitmqUrl');
const params = parseStreamUrl(url);
const child = fileURLToPath(new URL('./connection-child.ts', import.meta.url));
/** How long a child may take to exit after it closed: far more than it needs (< 1 s). */
const EXIT_BOUND_MS = bound(15_000);
/** The child's connectTimeoutMs and source timeoutMs: what a node that never answers cost. */
const CONNECT_TIMEOUT_MS = 10_000;

const real = rabbitForTests();

const newStream = () => real.newStream('process');

interface ChildRun {
  readonly lines: AsyncIterator<string>;
  readonly stdin: NodeJS.WritableStream;
  /** Exit code, or 'still running' (then killed) when it did not exit within the bound. */
  exited(): Promise<number | null | 'still running'>;
}

function startChild(...args: string[]): ChildRun {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exit = once(proc, 'exit').then(([code]) => code as number | null);
  return {
    lines: createInterface({ input: proc.stdout })[Symbol.asyncIterator](),
    stdin: proc.stdin,
    exited: async () => {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'still running'>(
        (resolve) => (timer = setTimeout(() => resolve('still running'), EXIT_BOUND_MS)),
      );
      const result = await Promise.race([exit, bound]);
      clearTimeout(timer);
      if (result === 'still running') proc.kill('SIGKILL');
      return result;
    },
  };
}

async function nextLine(run: ChildRun): Promise<string | undefined> {
  const next = await run.lines.next();
  return next.done === true ? undefined : next.value;
}

describe('a process using RabbitMQ', () => {
  it(
    'exits by itself after close() when its connections were cut and came back',
    async () => {
      const stream = await newStream();
      const proxy = await startProxy(params);
      const run = startChild(
        'reconnect-close',
        `rabbitmq-stream://${params.username}:${params.password}@127.0.0.1:${proxy.port}/`,
        stream,
      );

      expect(await nextLine(run)).toBe('ready');
      proxy.cut();
      run.stdin.write('cut\n');
      expect(await nextLine(run)).toBe('closed');

      expect(await run.exited()).toBe(0);
      await proxy.close();
    },
    bound(40_000),
  );

  it(
    'exits by itself when its signal gives up connect() while it waits for the broker',
    async () => {
      const run = startChild(
        'wait-abort',
        `rabbitmq-stream://${params.username}:${params.password}@127.0.0.1:${await freePort()}/`,
      );

      expect(JSON.parse((await nextLine(run)) ?? 'null')).toEqual({
        name: 'BrokerUnavailableError',
        message: expect.stringMatching(/was aborted after \d+ ms and 1 failed attempts/),
      });
      expect(await run.exited()).toBe(0);
    },
    bound(40_000),
  );

  it(
    'exits by itself after a producer sent, closed, and the connection closed',
    async () => {
      const run = startChild('producer', url, await newStream());

      expect(await nextLine(run)).toBe('closed');
      expect(await run.exited()).toBe(0); // no confirm deadline (10 minutes) is left behind
    },
    bound(40_000),
  );

  it(
    'exits by itself when closed while a reconnection waits out its delay',
    async () => {
      const run = startChild('close-reconnecting', url);

      expect(await nextLine(run)).toBe('closed');
      expect(await run.exited()).toBe(0); // the minute-long retry timer is gone
    },
    bound(40_000),
  );

  it(
    'runs a job to caught up well within connectTimeoutMs when its first URL never answers, and exits after close()',
    async () => {
      const hole = await startBlackHole();
      const source = await newStream();
      const target = await newStream();
      await publishAll(
        real.rabbit,
        source,
        Array.from({ length: 10 }, (_, n) => jsonMessage({ n })),
      );
      const frozenFirst = `rabbitmq-stream://${params.username}:${params.password}@127.0.0.1:${hole.port}/`;
      const run = startChild('frozen-first', `${frozenFirst},${url}`, source, target);

      const line = await nextLine(run);
      expect(await run.exited()).toBe(0); // nothing of the attempts on the frozen node lingers
      const { connectMs, runMs } = JSON.parse(line ?? '{}') as Record<string, number>;
      console.log(
        `frozen first URL, child process: connect ${connectMs?.toFixed(0)} ms, job start to ` +
          `caught up ${runMs?.toFixed(0)} ms, ${hole.connections} connection(s) to the frozen node`,
      );
      // Each of its connections (the main one, the source's reads, the target's questions)
      // waited out the whole timeout on the frozen node before trying the next URL.
      expect(connectMs).toBeLessThan(CONNECT_TIMEOUT_MS);
      expect(runMs).toBeLessThan(CONNECT_TIMEOUT_MS);
      const results = (await readAll(real.rabbit, target)).map((m) => decodeResult(m));
      expect(results.flatMap((r) => r.outputs.map((o) => o.value))).toEqual([10, 35]);
      await hole.allClosed();
      await hole.close();
    },
    bound(120_000),
  );

  it(
    'leaves no connection behind when a source gives up connecting',
    async () => {
      const proxy = await startProxy(params);
      proxy.hold(); // accepted, but the broker hears nothing: the handshake cannot finish
      const source = rabbitSource('any-stream', {
        connection: { ...params, port: proxy.port },
        timeoutMs: 300,
        reconnect: { attempts: 1 },
      });

      const reading = source.read(0n, new AbortController().signal)[Symbol.asyncIterator]().next();
      await expect(reading).rejects.toThrow(/no connection after 1 attempts: .*300 ms/);
      proxy.release(); // the broker answers now: an attempt still under way would connect

      await proxy.allClosed();
      await proxy.close();
    },
    bound(15_000),
  );

  it(
    'gives up asking for the statistics of a stream when the broker does not answer',
    async () => {
      const stream = await newStream();
      const proxy = await startProxy(params);
      void proxy.holdFrame(STREAM_STATS_KEY);

      const asking = streamStats({ ...params, port: proxy.port }, stream, 300);

      await expect(asking).rejects.toThrow(SourceError);
      await expect(asking).rejects.toThrow(
        `reading stream '${stream}' failed: RabbitMQ did not answer StreamStats within 300 ms`,
      );
      await expect(asking).rejects.toSatisfy(isRetriable);
      await proxy.allClosed();
      await proxy.close();
    },
    bound(15_000),
  );

  it.each([
    {
      refused: 'a wrong password',
      where: `rabbitmq-stream://${params.username}:wrong-${randomUUID()}@${params.hostname}:${params.port}/`,
      cause: /user 'guest': authentication failure \(code 8\)/,
      responseCode: 8,
    },
    {
      refused: 'a virtual host that does not exist',
      where: `rabbitmq-stream://${params.username}:${params.password}@${params.hostname}:${params.port}/no-such-vhost-${randomUUID()}`,
      cause: /virtual host 'no-such-vhost-[^']+': virtual host access failure \(code 12\)/,
      responseCode: 12,
    },
  ])(
    'rejects connecting, reading and endOffset with a non-retriable AccessRefusedError for $refused',
    async ({ where, cause, responseCode }) => {
      const run = startChild('refused', where);
      const reports: unknown[] = [];
      for (let line = await nextLine(run); line !== undefined; line = await nextLine(run)) {
        reports.push(JSON.parse(line));
      }

      expect(await run.exited()).toBe(0); // an uncaught exception would end it with 1
      const refusal = {
        name: 'AccessRefusedError',
        responseCode,
        retriable: false,
        message: expect.stringMatching(cause),
      };
      expect(reports).toEqual([
        { what: 'connect', ...refusal },
        { what: 'read', ...refusal },
        { what: 'endOffset', ...refusal },
      ]);
    },
    bound(40_000),
  );
});

const STREAM_STATS_KEY = 0x001c;
