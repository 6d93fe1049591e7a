/**
 * npm run bench [-- <case>...]: the named cases (every case when none is named, but for the
 * slow ones only run when named: OPT_IN_KINDS, such as large-steps), a table on
 * stdout, each ratio beside bench/results/latest.json's (ratio-changes.ts), the targets, and
 * the results as JSON: a full run writes bench/results/latest.json (the figures
 * the README quotes), a run of some cases bench/results/partial.json, so that a quick look at
 * one case never replaces the full run's file. Sizes come from the environment (see
 * config.ts); BENCH_MESSAGES=20000 gives a quick run.
 */
import { selectCases } from './case-selection.js';
import { codecCases } from './codec.js';
import { benchConfig, type BenchConfig } from './config.js';
import { brokerUrl, e2eCases, e2eUnavailable } from './e2e.js';
import { eventTimeCases } from './event-time.js';
import { failoverCases } from './failover.js';
import { frameAssemblyCases } from './frame-assembly.js';
import { hotPathCases } from './hot-path/case.js';
import { largeStepCases } from './large-steps.js';
import { memoryCases } from './memory.js';
import { mergeCases } from './merge.js';
import { observeCases } from './observe.js';
import { outboxCases, outboxUnavailable } from './outbox.js';
import { outboxWriteCases } from './outbox-write.js';
import { partitionCases } from './partitions.js';
import { recoveryCases } from './recovery.js';
import { resultLookupCases } from './result-lookup.js';
import { restartCases } from './restart.js';
import { scalingCases } from './scaling.js';
import { sinkCases, sinkUnavailable } from './sink.js';
import { writeLatestFigures } from './latest-figures.js';
import { formatRatioChanges, ratioChanges, readBaseline } from './ratio-changes.js';
import {
  formatMinutes,
  formatTable,
  formatVerdicts,
  verdicts,
  writeResults,
  type CaseKind,
  type CaseResult,
} from './report.js';

interface BenchCase {
  readonly title: string;
  readonly unavailable?: () => string | undefined;
  readonly run: (config: BenchConfig) => CaseResult[] | Promise<CaseResult[]>;
}

/** The broker of the cases that need one (`e2eUnavailable` says when there is none). */
const rabbitUrl = (): string => brokerUrl() ?? '';

const CASES: Readonly<Record<CaseKind, BenchCase>> = {
  'hot-path': {
    title: 'hot path',
    run: (config) => hotPathCases(config.messages, config.repeats),
  },
  codec: { title: 'codecs', run: (config) => codecCases(config.codecMs) },
  frames: {
    title: 'frame assembly',
    run: (config) => frameAssemblyCases(config.frames, config.repeats),
  },
  memory: { title: 'memory', run: (config) => memoryCases(config.memoryKeys, config.memoryAdds) },
  recovery: { title: 'recovery', run: (config) => recoveryCases(config.repeats) },
  'event-time': {
    title: 'event-time windows (throughput, state, restart, recovery state size)',
    run: (config) => eventTimeCases(config.messages, config.repeats),
  },
  observe: {
    title: 'observing a job (events, metrics)',
    run: (config) => observeCases(config.observeMessages, config.repeats),
  },
  e2e: {
    title: 'end to end',
    unavailable: e2eUnavailable,
    run: (config) => e2eCases(config.e2eMessages, Math.min(config.repeats, 3)),
  },
  failover: {
    title: "failover (SIGKILL of the active instance to the standby's first result, and its parts)",
    unavailable: e2eUnavailable,
    run: (config) => failoverCases(rabbitUrl(), config.failoverKills),
  },
  partitions: {
    title: 'partitions (2 partitions against 1)',
    unavailable: e2eUnavailable,
    run: (config) =>
      partitionCases(rabbitUrl(), config.partitionMessages, Math.min(config.repeats, 3)),
  },
  scaling: {
    title:
      'scaling by CPU (PartitionWorkers 2 threads vs 1 embedded; 1, 2, 4 partitions on RabbitMQ)',
    run: (config) =>
      scalingCases(config.partitionMessages, Math.min(config.repeats, 3), brokerUrl()),
  },
  merge: {
    title:
      'several inputs (4 inputs against 1 by CPU, and their restarts; what an input 10 s ahead holds)',
    run: (config) => mergeCases(config.partitionMessages, Math.min(config.repeats, 3)),
  },
  lookup: {
    title:
      "result lookup (readResult, 0 to 100k other results after ours) and an event-time job's restart",
    unavailable: e2eUnavailable,
    run: async (config) => [
      ...(await resultLookupCases(rabbitUrl(), Math.min(config.repeats, 3))),
      ...(await restartCases(rabbitUrl(), Math.min(config.repeats, 3))),
    ],
  },
  'outbox-write': {
    title: 'outbox writes (writeOutboxAll against writeOutbox per event, into PostgreSQL)',
    unavailable: sinkUnavailable,
    run: (config) =>
      outboxWriteCases({
        events: config.outboxWriteEvents,
        singleEvents: config.outboxWriteSingleEvents,
        repeats: config.repeats,
        postgresUrl: process.env.POSTGRES_URL ?? '',
      }),
  },
  sink: {
    title: 'database sink (rows/s into PostgreSQL and PGlite, against a plain upsert loop)',
    unavailable: sinkUnavailable,
    run: (config) =>
      sinkCases({
        messages: config.sinkMessages,
        singleMessages: config.sinkSingleMessages,
        repeats: config.repeats,
        postgresUrl: process.env.POSTGRES_URL,
      }),
  },
  outbox: {
    title:
      'outbox relay (rows/s from PostgreSQL into RabbitMQ while writers commit, against a plain select-publish-mark loop; CPU per row, commit-to-confirm latency)',
    unavailable: outboxUnavailable,
    run: (config) =>
      outboxCases({
        rows: config.outboxRows,
        singleRows: config.outboxSingleRows,
        repeats: Math.min(config.repeats, 3),
        postgresUrl: process.env.POSTGRES_URL ?? '',
        rabbitUrl: rabbitUrl(),
      }),
  },
  'large-steps': {
    title:
      'large steps (1h tumbling window of 10k / 100k / 1M keys against 1k; a restart in the middle of a 1M-output step)',
    unavailable: e2eUnavailable,
    run: (config) =>
      largeStepCases(
        rabbitUrl(),
        Math.min(config.repeats, 3),
        config.largeStepKeys,
        config.largeStepRestartKeys,
      ),
  },
};

const log = (text: string): void => console.log(text);
let selection: ReturnType<typeof selectCases>;
try {
  selection = selectCases(process.argv.slice(2));
} catch (error) {
  console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(2);
}
const config = benchConfig();
// Read before a full run rewrites it: this run's ratios are printed beside the file's.
const baseline = readBaseline();
const results: CaseResult[] = [];
const started = performance.now();

log(`bench: ${selection.kinds.join(', ')}; ${JSON.stringify(config)}`);
for (const kind of selection.kinds) {
  const benchCase = CASES[kind];
  const unavailable = benchCase.unavailable?.();
  if (unavailable !== undefined) {
    log(`${kind} NOT RUN: ${unavailable}`);
    continue;
  }
  log(`${benchCase.title}…`);
  const caseStarted = performance.now();
  try {
    results.push(...(await benchCase.run(config)));
  } catch (error) {
    // The other cases still run; the run's exit code says one failed.
    process.exitCode = 1;
    log(
      `${kind} FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }
  log(`${kind}: ${formatMinutes(performance.now() - caseStarted)}`);
}

const runMs = performance.now() - started;
const file = new URL(
  selection.full ? './results/latest.json' : './results/partial.json',
  import.meta.url,
);
writeResults(file.pathname, results, runMs, config);
if (selection.full) writeLatestFigures(); // bench/README.md quotes the run that latest.json holds
const changes = ratioChanges(results, 'file' in baseline ? baseline.file : undefined);
log(`\n${formatTable(results)}\n\n${formatRatioChanges(changes, baseline, config)}\n`);
log(`\n${formatVerdicts(verdicts(results))}\n`);
log(`the run took ${formatMinutes(runMs)}; written to ${file.pathname}`);
