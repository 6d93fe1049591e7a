import { ConfigError } from '../common/errors.js';
import { timerMs } from '../common/timer-duration.js';
import { MergedInputs } from '../engine/merge/merged-inputs.js';
import { MergedResults } from '../engine/merge/merged-results.js';
import type { Source } from '../ports/ports.js';
import { ResultsSource } from '../result-format/results-source.js';
import { parseDuration, type Duration } from '../windows/duration.js';

/** The options of `mergeInputs(sources, options)`. */
export interface MergeOptions {
  /**
   * How long an input may deliver nothing (wall clock) before the job goes on without it
   * (default '30s'; 'never': an input without messages holds every window open). An input left
   * out no longer holds the clock back: the others' windows close by their event times. When it
   * delivers again, its messages are merged from where the others had got (earlier event times
   * are late), and that decision is recorded in the results, so a restart repeats it.
   */
  readonly idleAfter?: Duration | 'never';
  /**
   * How many messages an input may hold in the merge while they wait for a lagging input
   * (default 10,000; an integer >= 1). An input ahead of the others by more stops being read
   * (its source's credit holds the broker's chunks back) until they catch up, as Kafka
   * Streams' `buffered.records.per.partition` does: memory stays bounded however far the
   * inputs drift apart (a stage 2 started over a day of one partition's backlog). An input
   * that holds the merge back is always read. Reads pause between chunks, so an input may hold
   * up to one chunk more.
   */
  readonly maxBufferedPerInput?: number;
}

/** The default `idleAfter`: an empty input holds results back for at most this long. */
const DEFAULT_IDLE_AFTER: Duration = '30s';
/** The default `maxBufferedPerInput`: a few MB of decoded messages per input. */
const DEFAULT_MAX_BUFFERED = 10_000;

/**
 * Several sources as ONE input of a job: `aggregate<T>(mergeInputs([a, b]))`. Their messages
 * are merged by event time (then input, then offset) and released once every input's
 * watermark has passed them, so a restart after a crash rebuilds the same sequence and
 * publishes the same bytes; each result records every input's position. The job's window must
 * be an event-time one closed by the watermark (tumbling, hopping or session with a grace).
 * The inputs' order and streams are part of the job's definition: a job started with another
 * list stops before publishing (JobDefinitionError). Each input is a stream source
 * (`broker.source(stream)`); the first may be read as a single active consumer
 * (`{ singleActive: { name } }`): its group then elects the one instance of the job that reads
 * every input, and a standby takes over from the last result when it goes.
 *
 * The inputs may instead all be `fromResults` sources (stage 2 over a partitioned stage 1,
 * README "Chaining stages"): each result message is one item of the merge, placed by the
 * least event time of its values, each value going to the windows of its own event time. A
 * list of both kinds is refused: a job's values are either messages it decodes or another
 * job's outputs.
 *
 * @example
 * ```ts
 * import { aggregate, mergeInputs } from 'stream-windows';
 * import { MemoryBroker } from 'stream-windows/memory';
 *
 * const broker = new MemoryBroker();
 * for (const name of ['orders-eu', 'orders-us', 'revenue']) broker.createStream(name);
 *
 * // One total per minute over both regions, by the orders' own times.
 * const job = aggregate<{ at: number; amount: number }>(
 *   mergeInputs([broker.source('orders-eu'), broker.source('orders-us')]),
 * )
 *   .eventTime((order) => order.at)
 *   .tumbling('1m', { grace: '5s' })
 *   .reduce((sum, order) => sum + order.amount, 0)
 *   .to(broker.target('revenue', { producer: 'revenue-per-minute' }));
 * await job.run({ untilCaughtUp: true });
 * ```
 */
export function mergeInputs<V>(
  sources: readonly ResultsSource<V>[],
  options?: MergeOptions,
): MergedResults<V>;
export function mergeInputs(sources: readonly Source[], options?: MergeOptions): MergedInputs;
export function mergeInputs(
  sources: readonly (Source | ResultsSource<unknown>)[],
  options: MergeOptions = {},
): MergedInputs {
  if (!isArray(sources) || sources.length === 0) {
    throw new ConfigError('mergeInputs', 'must be given a non-empty array of sources', sources);
  }
  const results = sources.filter(isResults);
  if (results.length > 0 && results.length < sources.length) {
    throw new ConfigError(
      'mergeInputs',
      "takes either plain stream sources or fromResults sources, not both: a job's values are either messages it decodes or another job's outputs",
      sources.map((source) => (isResults(source) ? 'fromResults' : 'source')),
    );
  }
  const plain = sources.map((source): Source => (isResults(source) ? source.source : source));
  const streams = new Set<string>();
  for (const [index, source] of (plain as readonly unknown[]).entries()) {
    const stream = checkInput(source, index);
    if (streams.has(stream)) {
      throw new ConfigError(
        'mergeInputs',
        'must name each stream once: an input read twice would count its messages twice',
        stream,
      );
    }
    streams.add(stream);
  }
  const maxBuffered = options.maxBufferedPerInput ?? DEFAULT_MAX_BUFFERED;
  if (!Number.isSafeInteger(maxBuffered) || maxBuffered < 1) {
    throw new ConfigError('maxBufferedPerInput', 'must be an integer >= 1', maxBuffered);
  }
  const idleAfter = idleAfterMs(options.idleAfter ?? DEFAULT_IDLE_AFTER);
  if (results.length === 0) return new MergedInputs(plain, idleAfter, maxBuffered);
  return new MergedResults(
    plain,
    idleAfter,
    maxBuffered,
    results.map((source) => source.decode),
  );
}

/** Array.isArray without narrowing a readonly array to any[]. */
function isArray(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}

function isResults(source: unknown): source is ResultsSource<unknown> {
  return source instanceof ResultsSource;
}

/**
 * The stream of input `index` (a fromResults input's underlying source), checked: a stream
 * source, in a consumer group only if it is the first (its group elects the instance that
 * reads them all).
 */
function checkInput(source: unknown, index: number): string {
  const candidate = source as Partial<Source> | null;
  if (typeof candidate?.read !== 'function' || typeof candidate.stream !== 'string') {
    throw new ConfigError(
      'mergeInputs',
      "takes stream sources (broker.source(stream)); a super stream's partitions, listed as sources, too",
      source,
    );
  }
  if (candidate.group !== undefined && index > 0) {
    throw new ConfigError(
      'mergeInputs',
      `takes a single active consumer source as its first input only ('${candidate.stream}' in group '${candidate.group}' is input ${index}): the first input's group elects the instance that reads every input, and groups on several streams could elect different instances`,
      candidate.stream,
    );
  }
  return candidate.stream;
}

function idleAfterMs(idleAfter: Duration | 'never'): number | undefined {
  if (idleAfter === 'never') return undefined;
  return timerMs('idleAfter', parseDuration('idleAfter', idleAfter));
}
