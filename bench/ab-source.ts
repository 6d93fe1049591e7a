/**
 * Before/after of a change to the RabbitMQ consume path, in the same run: the e2e job (results
 * discarded, so that the broker's publish path stays out) and the bare source, each with the
 * source of this tree and of an older copy of `src/` (e.g. `git archive <commit> src | tar -x
 * -C /tmp/before`), in rotating interleaved rounds, with the hot path (StepProcessor over the
 * stream's chunks) in the same rounds:
 *   npx tsx bench/ab-source.ts /tmp/before [messages] [rounds] [credit] [credit after]
 * Prints each ratio as its median with the min-max of its rounds.
 */
import { existsSync } from 'node:fs';
import type { Source } from '../src/ports/ports.js';
import { connect, parseStreamUrl, type RabbitSourceOptions } from '../src/rabbitmq/index.js';
import {
  discardingTarget,
  e2eProcessorConfig,
  ownConsume,
  profileSource,
  readChunks,
  runHotPath,
  runJob,
} from './e2e.js';
import { cpuClock, interleavedRounds, median, perSecond, ratioSpread } from './measure.js';

const [beforeDir, messagesArg = '1000000', roundsArg = '5', creditBefore, creditAfter] =
  process.argv.slice(2);
if (beforeDir === undefined)
  throw new Error('usage: ab-source.ts <before dir> [messages] [rounds]');
const messages = Number(messagesArg);
const url = process.env.RABBITMQ_STREAM_URL;
if (url === undefined || url === '') throw new Error('set RABBITMQ_STREAM_URL');
type SourceFactory = (stream: string, options: RabbitSourceOptions) => Source;
// The older copy may predate src/rabbitmq's split into read/, write/ and cluster/.
const beforeSource = ['read/source.ts', 'source.ts']
  .map((file) => `${beforeDir}/src/rabbitmq/${file}`)
  .find((path) => existsSync(path));
if (beforeSource === undefined) throw new Error(`no src/rabbitmq source under ${beforeDir}`);
const before = (await import(beforeSource)) as {
  rabbitSource: SourceFactory;
};
const { rabbitSource } = (await import('../src/rabbitmq/read/source.js')) as {
  rabbitSource: SourceFactory;
};

const adapter = await connect(url);
const stream = await profileSource(adapter, url, messages);
const connection = parseStreamUrl(url);
const withCredit = (credit: string | undefined): RabbitSourceOptions => ({
  connection,
  ...(credit === undefined ? {} : { credit: Number(credit) }),
});
const beforeOptions = withCredit(creditBefore);
const options = withCredit(creditAfter ?? creditBefore);
const sizing = adapter.target(stream, { producer: 'bench' });
const chunks = await readChunks(adapter.source(stream), messages);
const config = e2eProcessorConfig(messages);
/** CPU milliseconds of this process per task and round, next to the wall time it returns. */
const cpu: Record<string, number[]> = {};
const withCpu = (name: string, task: () => Promise<number>) => async (): Promise<number> => {
  const started = cpuClock();
  const ms = await task();
  (cpu[name] ??= []).push(cpuClock() - started);
  return ms;
};
const rounds = await interleavedRounds(
  {
    jobBefore: withCpu('jobBefore', () =>
      runJob(before.rabbitSource(stream, beforeOptions), discardingTarget(sizing)),
    ),
    jobAfter: withCpu('jobAfter', () =>
      runJob(rabbitSource(stream, options), discardingTarget(sizing)),
    ),
    consumeBefore: withCpu('consumeBefore', () =>
      ownConsume(before.rabbitSource(stream, beforeOptions), messages),
    ),
    consumeAfter: withCpu('consumeAfter', () =>
      ownConsume(rabbitSource(stream, options), messages),
    ),
    hotPath: withCpu('hotPath', () => {
      const started = performance.now();
      runHotPath(config, chunks, sizing.maxWriteBytes);
      return Promise.resolve(performance.now() - started);
    }),
  },
  Number(roundsArg),
);
// The warm-up round's CPU times are dropped as its wall times are.
for (const times of Object.values(cpu)) times.shift();
await adapter.close();

const rate = (ms: readonly number[]): string =>
  `${(perSecond(messages, median(ms)) / 1000).toFixed(0)}k`;
const show = (name: string, task: readonly number[], baseline: readonly number[]): void => {
  const { median: m, min, max } = ratioSpread(task, baseline);
  console.log(`${name.padEnd(28)} ${m.toFixed(2)} (${min.toFixed(2)}-${max.toFixed(2)})`);
};
for (const [name, ms] of Object.entries(rounds))
  console.log(`${name.padEnd(28)} ${rate(ms)} msg/s`);
show('job after / before', rounds.jobAfter, rounds.jobBefore);
show('consume after / before', rounds.consumeAfter, rounds.consumeBefore);
show('job before / hot path', rounds.jobBefore, rounds.hotPath);
show('job after / hot path', rounds.jobAfter, rounds.hotPath);
const cpuOf = (name: string): number[] => cpu[name] ?? [];
show('CPU: job after / before', cpuOf('jobAfter'), cpuOf('jobBefore'));
show('CPU: consume after / before', cpuOf('consumeAfter'), cpuOf('consumeBefore'));
