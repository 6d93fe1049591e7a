import { Registry } from 'prom-client';
import { JOB_EVENT_NAMES } from '../src/api/job-events.js';
import { aggregate } from '../src/dsl/pipeline.js';
import type { RunSummary } from '../src/api/run-options.js';
import { MemoryBroker } from '../src/memory/broker.js';
import { jobMetrics } from '../src/metrics/job-metrics.js';
import {
  CHUNK_MESSAGES,
  corpusShape,
  encodeReading,
  eventTimeOf,
  readings,
  type Reading,
} from './corpus.js';
import { costOf, interleavedRounds, median, perSecond, spreadOf } from './measure.js';
import type { CaseResult } from './report.js';

const KEYS = 100;
const EVENTS = JOB_EVENT_NAMES;

/** How a run is observed: not at all, by a no-op listener on every event, or by jobMetrics. */
const OBSERVERS = {
  'no-listeners': () => () => undefined,
  'no-op-listeners': (job: Job) => {
    const offs = EVENTS.map((name) => job.on(name, () => undefined));
    return () => {
      for (const off of offs) off();
    };
  },
  metrics: (job: Job) => {
    const metrics = jobMetrics(job, { registry: new Registry() });
    return () => metrics.close();
  },
} as const;

type Observer = keyof typeof OBSERVERS;
type Job = ReturnType<typeof tumblingJob>;

function tumblingJob(broker: MemoryBroker, target: string) {
  return aggregate<Reading>(broker.source('source'))
    .tumbling('1m')
    .key((reading) => reading.sensor)
    .reduce((total, reading) => total + reading.value, 0)
    .to(broker.target(target, { producer: 'bench' }));
}

/**
 * Case 6: the whole job (Runner, embedded broker, tumbling 1m, 100 keys, `untilCaughtUp`) run
 * unobserved, with a no-op listener on every event, and with `jobMetrics` on a Registry, in
 * interleaved rounds. What observing costs is the ratio to the unobserved run. The hot-path
 * case does not see events at all: they live in the Runner, around StepProcessor.process.
 */
export async function observeCases(messages: number, repeats: number): Promise<CaseResult[]> {
  const broker = sourceBroker(messages);
  let runs = 0;
  const summaries = new Map<Observer, RunSummary>();
  const runObserved = (observer: Observer) => async () => {
    const target = `results-${runs++}`;
    broker.createStream(target);
    const job = tumblingJob(broker, target);
    const stop = OBSERVERS[observer](job);
    const cost = await costOf(async () =>
      summaries.set(observer, await job.run({ untilCaughtUp: true })),
    );
    stop();
    broker.deleteStream(target);
    return cost;
  };
  const tasks = {
    'no-listeners': runObserved('no-listeners'),
    'no-op-listeners': runObserved('no-op-listeners'),
    metrics: runObserved('metrics'),
  };
  // The figures are CPU time: a cost of a few percent drowns in what a loaded 2-core machine
  // does to wall time. Wall time of the same rounds is there for the record.
  const rounds = await interleavedRounds(tasks, repeats);
  const cpuOf = (observer: Observer): number[] => rounds[observer].map((cost) => cost.cpuMs);
  const results = new Set([...summaries.values()].map((summary) => summary.results));
  if (results.size !== 1 || results.has(0)) {
    throw new Error(
      `observe bench: the runs stored different numbers of results (${[...results].join(', ')})`,
    );
  }
  const base = cpuOf('no-listeners');
  return (Object.keys(OBSERVERS) as Observer[]).map((observer): CaseResult => {
    const cpu = spreadOf(cpuOf(observer));
    const perRound = cpuOf(observer).map((ms, round) => (base[round] ?? Number.NaN) / ms);
    return {
      name: `observe/${observer}`,
      kind: 'observe',
      msgsPerSec: perSecond(messages, cpu.median),
      msgsPerSecMin: perSecond(messages, cpu.max),
      msgsPerSecMax: perSecond(messages, cpu.min),
      ratios: observer === 'no-listeners' ? {} : { 'no-listeners': median(base) / cpu.median },
      values: {
        cpuMs: cpu.median,
        cpuMsMin: cpu.min,
        cpuMsMax: cpu.max,
        wallMs: median(rounds[observer].map((cost) => cost.wallMs)),
        ...(observer === 'no-listeners'
          ? {}
          : { 'no-listenersMin': Math.min(...perRound), 'no-listenersMax': Math.max(...perRound) }),
      },
    };
  });
}

/** The hot-path corpus (bursts filling 1-minute windows) in a 'source' stream, 500 per chunk. */
function sourceBroker(messages: number): MemoryBroker {
  const broker = new MemoryBroker();
  broker.createStream('source');
  const shape = corpusShape(messages, KEYS);
  let pending: Uint8Array[] = [];
  let index = 0;
  for (const reading of readings(shape)) {
    pending.push(encodeReading(reading, eventTimeOf(index++, shape)));
    if (pending.length === CHUNK_MESSAGES || index === messages) {
      broker.append('source', pending);
      pending = [];
    }
  }
  return broker;
}
