/**
 * npm run bench: every case of issue 4, a table on stdout, bench/results/latest.json.
 * Sizes come from the environment (see config.ts); BENCH_MESSAGES=20000 gives a quick run.
 */
import { codecCases } from './codec.js';
import { benchConfig } from './config.js';
import { e2eCases, e2eUnavailable } from './e2e.js';
import { eventTimeCases } from './event-time.js';
import { frameAssemblyCases } from './frame-assembly.js';
import { hotPathCases } from './hot-path/case.js';
import { memoryCases } from './memory.js';
import { observeCases } from './observe.js';
import { partitionCases } from './partitions.js';
import { recoveryCases } from './recovery.js';
import { resultLookupCases } from './result-lookup.js';
import { formatTable, formatVerdicts, verdicts, writeResults, type CaseResult } from './report.js';

const RESULTS = new URL('./results/latest.json', import.meta.url);

const config = benchConfig();
const results: CaseResult[] = [];
const log = (text: string): void => console.log(text);

log(`bench: ${JSON.stringify(config)}`);
log('hot path…');
results.push(...hotPathCases(config.messages, config.repeats));
log('codecs…');
results.push(...(await codecCases(config.codecMs)));
log('frame assembly…');
results.push(...(await frameAssemblyCases(config.frames, config.repeats)));
log('memory…');
results.push(...(await memoryCases(config.memoryKeys, config.memoryAdds)));
log('recovery…');
results.push(...(await recoveryCases(config.repeats)));
log('event-time windows (throughput, state, restart, recovery state size)…');
results.push(...(await eventTimeCases(config.messages, config.repeats)));
log('observing a job (events, metrics)…');
results.push(...(await observeCases(config.observeMessages, config.repeats)));
const unavailable = e2eUnavailable();
if (unavailable === undefined) {
  log('end to end…');
  try {
    results.push(...(await e2eCases(config.e2eMessages, Math.min(config.repeats, 3))));
  } catch (error) {
    log(`end-to-end cases NOT RUN: ${error instanceof Error ? error.message : String(error)}`);
  }
  const url = process.env.RABBITMQ_STREAM_URL;
  if (url === undefined || url === '') {
    log('partition cases NOT RUN: they need RABBITMQ_STREAM_URL');
  } else {
    log('partitions (failover time, 2 partitions against 1)…');
    results.push(
      ...(await partitionCases(url, config.partitionMessages, Math.min(config.repeats, 3))),
    );
    log('result lookup (readResult, 0 to 100k other results after ours)…');
    results.push(...(await resultLookupCases(url, Math.min(config.repeats, 3))));
  }
} else {
  log(`end-to-end cases NOT RUN: ${unavailable}`);
}

writeResults(RESULTS.pathname, results);
log(`\n${formatTable(results)}\n\n${formatVerdicts(verdicts(results))}\n`);
log(`written to ${RESULTS.pathname}`);
