// The job process of the SIGTERM/SIGINT tests: one job under runUntilSignal. It writes one
// line to stdout per thing the parent waits for ('started', 'published', 'restart', 'closed')
// and per log line ('log <level> <message>'), so the parent signals it at a chosen moment.
import {
  aggregate,
  runUntilSignal,
  type Logger,
  type Runner,
  type RunUntilSignalOptions,
  type StoppableJob,
  type Target,
  type TargetOptions,
} from '../../src/index.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { brokerWithCountedReadings, type Reading } from '../support/jobs/memory-job.js';

export interface SignalEvent {
  readonly sensor: number;
  readonly value: number;
}

/**
 * - `rabbit URL SOURCE TARGET [until]`: a tumbling job on the real broker, until a signal
 *   (or until caught up with `until`);
 * - `backoff`: every publish loses its confirm, and the job waits a minute before resuming;
 * - `hanging-close`: an idle job whose close() never ends;
 * - `no-confirm`: a target whose confirms never come, with a grace of 300 ms;
 * - `other-listener`: an idle job, and a SIGTERM listener of the user's that tells each call.
 */
export type SignalChildMode =
  'rabbit' | 'backoff' | 'hanging-close' | 'no-confirm' | 'other-listener';

const [mode, ...args] = process.argv.slice(2) as [SignalChildMode, ...string[]];
const tell = (line: string): void => void process.stdout.write(`${line}\n`);
const logger: Logger = {
  debug: (_, message) => tell(`log debug ${message}`),
  info: (_, message) => tell(`log info ${message}`),
  warn: (_, message) => tell(`log warn ${message}`),
  error: (_, message) => tell(`log error ${message}`),
};
/** A target that tells each publish, and publishes with `publish` (the target's own by default). */
const telling = (target: Target, publish = target.publish.bind(target)): Target => ({
  ...forwarding(target),
  publish: (id, messages) => {
    tell('published');
    return publish(id, messages);
  },
});

if (mode === 'rabbit') {
  const [url, source, targetStream, until] = args;
  if (url === undefined || source === undefined || targetStream === undefined) {
    throw new Error('usage: signal-child.ts rabbit URL SOURCE TARGET [until]');
  }
  const rabbit = await connect(url);
  const target = telling(rabbit.target(targetStream, { producer: 'signal-test' }));
  const job = aggregate<SignalEvent>(rabbit.source(source))
    .tumbling('1s')
    .key((e) => e.sensor)
    .reduce((sum, e) => sum + e.value, 0)
    .to(target, { logger });
  await run(job, { untilCaughtUp: until === 'until', close: () => rabbit.close() });
} else {
  const memory = brokerWithCountedReadings(5);
  // Stands for a connection: a handle that keeps the process alive until it is closed.
  const connection = setInterval(() => undefined, 60_000);
  const closeConnection = (): void => clearInterval(connection);
  const memoryJob = (target: Target, options: TargetOptions = {}) =>
    aggregate<Reading>(memory.source('source'))
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(target, { logger, ...options });
  const target = memory.target('target', { producer: 'p' });
  if (mode === 'backoff') {
    for (let i = 1; i <= 5; i++)
      memory.injectFault({ stream: 'target', atPublish: i, point: 'lose-confirm' });
    const job = memoryJob(telling(target), { retryDelayMs: 60_000 });
    job.on('restart', () => tell('restart'));
    await run(job, { graceMs: 60_000, close: closeConnection });
  } else if (mode === 'hanging-close') {
    await run(memoryJob(target), { close: () => new Promise<never>(() => undefined) });
  } else if (mode === 'other-listener') {
    process.on('SIGTERM', () => tell('other listener'));
    await run(memoryJob(target), { close: closeConnection });
  } else {
    const job = memoryJob(
      telling(target, () => new Promise<never>(() => undefined)),
      { maxInFlight: 2 },
    );
    await run(job, { graceMs: 300, close: closeConnection });
  }
}

async function run(
  job: StoppableJob & Pick<Runner<unknown, unknown, unknown>, 'on'>,
  options: RunUntilSignalOptions,
): Promise<void> {
  job.on('started', () => tell('started'));
  const close = options.close;
  const summary = await runUntilSignal(job, {
    ...options,
    logger,
    close: () => {
      tell('closed');
      return close();
    },
  });
  tell(`done ${summary.results}`);
}
