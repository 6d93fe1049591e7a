import { count, type CountOptions } from '../windows/count.js';
import { compaction, type CompactionOptions } from '../windows/compaction.js';
import { hopping, type HoppingOptions } from '../windows/hopping.js';
import { session, type SessionOptions } from '../windows/session.js';
import {
  tumbling,
  type EventTimeTumblingOptions,
  type TumblingOptions,
} from '../windows/tumbling.js';
import type { WindowSpec } from '../windows/window-spec.js';
import type { EventTimeWindowSpec, WatermarkWindowSpec } from '../windows/event-time-spec.js';
import { parseDuration, type Duration, type TumblingSize } from '../windows/duration.js';
import { fold, latest, reduceFirst, type Aggregator } from '../common/aggregator.js';
import type { KeyedOutput } from '../common/keyed-output.js';
import { ConfigError } from '../common/errors.js';
import { checkReference } from '../common/stream-protocol.js';
import { timerMs } from '../common/timer-duration.js';
import { checkLogger, type Logger } from '../common/logger.js';
import { checkWarnAfterRetries } from '../common/retry-warning.js';
import type { PartitionedSource, Source, Target } from '../ports/ports.js';
import {
  PartitionedRunner,
  formerPartitionProducer,
  type Partition,
} from '../partitioning/partitioned-runner.js';
import { SuperStreamTarget } from '../partitioning/super-stream-target.js';
import { encodeStep } from '../result-format/step-writes.js';
import { type PackMode, type SingleFormat } from '../result-format/result-format.js';
import { jobDefinition } from '../api/job-definition.js';
import { Runner } from '../engine/runner.js';
import type { StandardSchemaV1 } from '../api/standard-schema.js';
import { processorConfig, windowRules, type ProcessorConfig } from '../engine/processor-factory.js';
import type { ErrorPolicy, LatePolicy } from '../api/policies.js';
import type { EarlyUpdates } from '../api/policies.js';
import type { StepResult } from '../result-format/step-result.js';
import { ownEncoding, userEncoder, type EncodedBodies } from '../result-format/user-encoder.js';
import { bodyDecoder, type ValueFormat } from '../api/value-decoder.js';
import { ResultsSource, type MessageValuesDecoder } from '../result-format/results-source.js';
import type { ValueStage } from '../engine/value-stage.js';
import { MergedInputs } from '../engine/merge/merged-inputs.js';
import { MergedResults } from '../engine/merge/merged-results.js';
import type {
  AfterEventTimeOrKey,
  AfterWindow,
  BeforeEventTimeAndKey,
  BeforeEventTimeKeyAndWindow,
  BuilderStage,
  NoWindowYet,
  NoWindowYetOneInput,
  SeveralInputs,
} from './builder-stage.js';

interface Settings<T> {
  /**
   * A super stream's partitions run one loop each (`.toPartitions()`); several merged inputs
   * one loop over the merge.
   */
  readonly source: Source | PartitionedSource | MergedInputs;
  readonly format: ValueFormat<unknown>;
  readonly schema: StandardSchemaV1 | undefined;
  /** Set when the source is `fromResults(...)`: its messages are read whole, by that. */
  readonly readValues: MessageValuesDecoder<T> | undefined;
  readonly stages: readonly ValueStage[];
  readonly eventTime: ((value: T) => number | Date) | undefined;
  readonly window: AnyWindowSpec | undefined;
  /** Event-time windows only: how far the watermark trails the latest event time, ms. */
  readonly maxOutOfOrderness: number | undefined;
  /** Event-time windows only: early updates of open windows (none by default). */
  readonly early: EarlyUpdates | undefined;
  readonly key: ((value: T) => string | number) | undefined;
  readonly late: LatePolicy | undefined;
  readonly onError: ErrorPolicy;
  readonly maxDeadLetters: number;
}

/** Settings of the 'dead-letter' error policy. */
export interface DeadLetterOptions {
  /**
   * Dead letters one step may hold (default 1,000). The next failure in the step stops the
   * job with a DeadLetterLimitError: that many usually mean a bug, not bad input.
   */
  readonly maxDeadLetters?: number;
}

const DEFAULT_MAX_DEAD_LETTERS = 1_000;

/** A step window (one contiguous run of offsets per result) or an event-time window. */
type AnyWindowSpec = WindowSpec | EventTimeWindowSpec;

/** The options of `.to()` and `.toPartitions()`: how results are packed, encoded, routed and flushed. */
export interface TargetOptions<R = unknown> {
  /**
   * How a step with several outputs is written (default 'single'): 'single' as ONE array in
   * ONE data section, the one packing the stock stream client, AMQP 1.0 and AMQP 0-9-1 readers
   * all read whole; 'sections' as data sections of ONE message; 'batch' as ONE sub-entry batch
   * of one message each (README: "What a consumer sees of each packing").
   */
  readonly pack?: PackMode;
  /** With pack 'single': the array as canonical 'msgpack' (default) or canonical 'json'. */
  readonly format?: SingleFormat;
  /**
   * The user's own format instead of the result format: the body of the step's ONE target
   * message, or an array of bodies written as ONE sub-entry batch under the step's one
   * publishing id (never separate publishes). Each body becomes an AMQP 1.0 message with one
   * data section. Must be deterministic — a function of `result` only — so that a replay
   * after a crash writes the same bytes and the broker's deduplication holds. With a `flush`,
   * a step may hold no output (only filtered, late or dead-lettered messages).
   */
  readonly encode?: (result: StepResult<R>) => EncodedBodies;
  /**
   * With a super-stream target (`superStreamTarget`), and only then: the routing key of a
   * step's result, which picks its partition (e.g. `(result) => String(result.outputs[0]?.key)`).
   * Must be a function of `result` only, so a replay goes to the same partition.
   */
  readonly route?: (result: StepResult<R>) => string;
  /**
   * Results awaiting their confirm at once (default 32). A super-stream target takes 1, the
   * default there: at most one unconfirmed result across its partitions (see
   * `SuperStreamTarget`), so any other value is refused.
   */
  readonly maxInFlight?: number;
  /** First delay before resuming after a retriable error, ms (default 100; 0 retries at once). */
  readonly retryDelayMs?: number;
  /** The delay doubles after each retriable error up to this, ms (default 5,000, or retryDelayMs if larger). */
  readonly maxRetryDelayMs?: number;
  /**
   * Retriable errors in a row, with no result confirmed between them, before the job warns
   * that it is retrying and getting nowhere (default 5: about 3 s at the default delays). The
   * warning names the job, the count, how long and the last cause, comes again at twice as many
   * retries, then four times, and is followed by one line when the job recovers. It goes to
   * `logger` at warn, or to stderr when no logger is given; `Infinity` silences it.
   */
  readonly warnAfterRetries?: number;
  /**
   * Where the job logs its start (with its resume point), restarts (with cause and delay),
   * catching up and stopping: anything with pino's `info(fields, message)` shape (default
   * silent). Per-step figures are events and metrics, not log lines.
   */
  readonly logger?: Logger;
  /** Publish open windows at the end of an `untilCaughtUp` run or after a silence: see FlushOptions. */
  readonly flush?: FlushOptions;
  /**
   * Every result carries the job's definition (source, window; `sw-job`), and a start that
   * finds its producer's last result written by another definition stops with a
   * JobDefinitionError before publishing anything: one job definition per producer name.
   * `true` goes on from such a result with this job's definition (a warning is logged): for
   * changing a step job's window on purpose. A new source, or a change from an event-time
   * window, is refused even so (DefinitionChangeRefusedError): it would skip or lose
   * messages; a change to one stops with a RecoveryError (no state to restore). Set it for the start that makes the change, then remove it, or the check
   * stays off. Default false; not with your own `encode`, whose messages carry no definition.
   */
  readonly allowDefinitionChange?: boolean;
}

/**
 * Publishing open windows before they end, for quiet sources (both off by default). Each
 * gives up byte-identical replay (the results depend on when a run ended or a silence came)
 * but not effectively-once: with one instance reading at a time, every source message still
 * lands in exactly one published result (two at once can decide different flushes).
 * A flushed result is marked `flushed`; see the README's "Quiet sources" for what follows it.
 *
 * Step windows: a flushed tumbling or session window (or compaction `every` / `gap` step)
 * stays open, so that the next step of messages inside it has every output marked
 * `continues` (added to the flushed one, they are the window); a count window ends with the
 * flush. A restart reads the producer's last result to reopen the window it flushed (with
 * your own `encode` it cannot: the next step is then not marked). Not for `.transform()`.
 */
export interface FlushOptions {
  /**
   * A run with `untilCaughtUp: true` publishes its open windows when it has caught up,
   * instead of leaving them to the next run (default false). Two such runs at once that catch
   * up at different ends flush at different offsets: do not overlap them (not checked).
   */
  readonly caughtUp?: boolean;
  /**
   * After this many ms of wall-clock silence (no chunk read) with windows open, they are
   * published (default: never). Must be > 0. A silence is one instance's clock: two instances
   * reading at once would flush at different offsets and count messages twice. So it needs a
   * single active consumer source (`singleActive`), or `oneInstance`.
   */
  readonly idleMs?: number;
  /**
   * With `idleMs` on a source read without a single active consumer group: you run one
   * instance of the job at a time (default false: such a job is refused). Read the README's
   * "Quiet sources" for what two instances at once would do.
   */
  readonly oneInstance?: boolean;
}

/**
 * Starts a job that reads `source`. Values are decoded as JSON unless `.decode()` says
 * otherwise; event time is the message's creation-time property, else its chunk's
 * timestamp, unless `.eventTime()` says otherwise. A `fromResults(...)` source gives the
 * outputs of another job's results instead, with their window start as event time.
 *
 * @example
 * ```ts
 * import { aggregate } from 'stream-windows';
 * import { MemoryBroker } from 'stream-windows/memory';
 *
 * const broker = new MemoryBroker();
 * broker.createStream('readings');
 * broker.createStream('max-per-minute');
 *
 * // Source stage, window stage, aggregate stage, target stage.
 * const job = aggregate<{ sensor: string; celsius: number }>(broker.source('readings'))
 *   .tumbling('1m')
 *   .key((r) => r.sensor)
 *   .reduce((max, r) => Math.max(max, r.celsius), -Infinity)
 *   .to(broker.target('max-per-minute', { producer: 'max-per-minute' }));
 * await job.run({ untilCaughtUp: true });
 * ```
 */
export function aggregate<V>(source: ResultsSource<V>): PipelineBuilder<V>;
/**
 * A job over the result streams of other jobs (`mergeInputs([fromResults(...), ...])`): as a
 * job over several inputs, receiving each result's values as `fromResults` gives them.
 */
export function aggregate<V>(inputs: MergedResults<V>): PipelineBuilder<V, SeveralInputs>;
/**
 * A job over several inputs (`mergeInputs`): its window must be an event-time one closed by
 * the watermark (a step or count window does not compile, and is refused when it runs).
 */
export function aggregate<T = unknown>(inputs: MergedInputs): PipelineBuilder<T, SeveralInputs>;
export function aggregate<T = unknown>(source: Source | PartitionedSource): PipelineBuilder<T>;
export function aggregate<T = unknown>(
  source: Source | PartitionedSource | ResultsSource<T> | MergedInputs,
): PipelineBuilder<T> {
  const results = source instanceof ResultsSource ? source : undefined;
  return new PipelineBuilder<T>({
    source: results?.source ?? (source as Source | PartitionedSource | MergedInputs),
    format: 'json',
    readValues: results?.decode,
    schema: undefined,
    stages: [],
    eventTime: undefined,
    window: undefined,
    maxOutOfOrderness: undefined,
    early: undefined,
    key: undefined,
    late: undefined,
    onError: 'stop',
    maxDeadLetters: DEFAULT_MAX_DEAD_LETTERS,
  });
}

/**
 * The source and window stages of a job, from `aggregate()` to `.reduce()`, `.aggregate()` or
 * `.transform()`. Immutable: every method returns a new builder, so a partial pipeline can be
 * reused.
 *
 * `S` records what the chain has set (./builder-stage.ts): after `.eventTime()` or `.key()`,
 * `.decode()`, `.filter()`, `.map()` and `.transform()` do not compile; after a window method,
 * no second one, `.compact()` or `.transform()` does. `PipelineBuilder<T>` (what `aggregate()`
 * returns, and the type to give a variable that holds any builder) records nothing and takes
 * every call; the builder checks the same rules when it runs (a `ConfigError`).
 *
 * @example
 * ```ts
 * import { aggregate } from 'stream-windows';
 * import { MemoryBroker } from 'stream-windows/memory';
 *
 * const broker = new MemoryBroker();
 * broker.createStream('readings');
 * broker.createStream('max-per-minute');
 *
 * interface Reading {
 *   sensor: string;
 *   celsius: number;
 * }
 *
 * // A partial pipeline, reused by two jobs: the source stage comes before the window.
 * const valid = aggregate<Reading>(broker.source('readings'))
 *   .filter((r) => Number.isFinite(r.celsius))
 *   .onError('dead-letter');
 * const perMinute = valid.tumbling('1m').key((r) => r.sensor);
 * const perHundred = valid.count(100);
 * console.log(perMinute, perHundred);
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any: a builder whose calls its type does not record, which takes every call
export class PipelineBuilder<T, S extends BuilderStage = any> {
  /** For the types only (never set): the stage `S` the chain has reached. */
  declare readonly '~stage'?: S;

  constructor(private readonly settings: Settings<T>) {}

  /**
   * How source bodies become values: 'json' (default), 'msgpack', 'string', 'raw' or a
   * function. The value type stays the job's `T` unless a function or a schema says otherwise.
   * With a Standard Schema validator (zod, valibot, arktype, ...) each value is checked, not
   * cast: the job reads the schema's output, and a failing value is a 'decode' error (the job
   * stops, or the message is dead-lettered) naming the issues and their paths. The validator
   * must be synchronous: one that returns a Promise stops the job at the first message with a
   * ProcessingError caused by a ConfigError, whatever the error policy.
   */
  decode<U = T>(
    this: PipelineBuilder<T, BeforeEventTimeAndKey>,
    format: ValueFormat<U>,
  ): PipelineBuilder<U, S>;
  decode<Schema extends StandardSchemaV1>(
    this: PipelineBuilder<T, BeforeEventTimeAndKey>,
    format: ValueFormat<unknown>,
    schema: Schema,
  ): PipelineBuilder<StandardSchemaV1.InferOutput<Schema>, S>;
  decode(
    this: PipelineBuilder<T, BeforeEventTimeAndKey>,
    format: ValueFormat<unknown>,
    schema?: StandardSchemaV1,
  ): PipelineBuilder<unknown, S> {
    bodyDecoder(format, schema); // validates now, where the mistake is made
    this.notOnResults('decode', format);
    if (this.settings.stages.length > 0) {
      throw new ConfigError(
        'decode',
        'must come before .filter() and .map(), which read the decoded value',
        format,
      );
    }
    this.beforeReaders('decode', format);
    return new PipelineBuilder<unknown, S>({
      ...this.settings,
      format,
      schema,
      eventTime: undefined,
      key: undefined,
    });
  }

  /**
   * Keeps only the values `predicate` accepts (truthy), before event time, key and window.
   * Must be pure (replay). A refused message stays in its step's offsets, counted as
   * `filtered`; it is no element of the window (a count window counts values that pass).
   * A predicate that throws is a 'filter' error: the job stops, or the message is
   * dead-lettered.
   */
  filter<N extends T>(
    this: PipelineBuilder<T, BeforeEventTimeAndKey>,
    predicate: (value: T) => value is N,
  ): PipelineBuilder<N, S>;
  filter(
    this: PipelineBuilder<T, BeforeEventTimeAndKey>,
    predicate: (value: T) => unknown,
  ): PipelineBuilder<T, S>;
  filter(
    this: PipelineBuilder<T, BeforeEventTimeAndKey>,
    predicate: (value: T) => unknown,
  ): PipelineBuilder<T, S> {
    return this.withStage('filter', predicate);
  }

  /**
   * Replaces each value by `fn(value)`, before event time, key and window: `.eventTime()`
   * and `.key()` read the mapped value. Must be pure (replay). One that throws is a 'map'
   * error: the job stops, or the message is dead-lettered.
   */
  map<U>(
    this: PipelineBuilder<T, BeforeEventTimeAndKey>,
    fn: (value: T) => U,
  ): PipelineBuilder<U, S> {
    return this.withStage('map', fn);
  }

  /**
   * A job without a window: each message that passes becomes ONE target message, the
   * bodies `fn` gives (an array: one sub-entry batch), published under the id of the source
   * message's offset (`lastWriteId(offset)`). `fn` must be deterministic; one that throws is a 'map' error, which stops the
   * job: a target of user messages has no place for dead letters, so 'dead-letter' is
   * refused (write them as you choose with `.count(1)` and `.to(target, { encode })`).
   */
  transform(
    this: PipelineBuilder<T, BeforeEventTimeKeyAndWindow>,
    fn: (value: T) => EncodedBodies,
  ): TransformBuilder {
    if (this.settings.onError === 'dead-letter') {
      throw new ConfigError(
        'transform',
        "writes user messages only and cannot hold dead letters: use onError('stop'), or count(1) with your own encode",
        this.settings.onError,
      );
    }
    const mapped: PipelineBuilder<EncodedBodies> = this.map(fn);
    return new TransformBuilder(mapped.count(1).aggregate(latest<EncodedBodies>()));
  }

  /** Event time of a value, epoch ms or Date. Must depend on the value only (replay). */
  eventTime(extractor: (value: T) => number | Date): PipelineBuilder<T, AfterEventTimeOrKey<S>> {
    return this.with({ eventTime: requireFunction('eventTime', extractor) });
  }

  /**
   * Fixed ('30s', '1m', '1h') or calendar ('1d', '1w', '1mo') windows: see `tumbling`. With
   * `grace`, event-time windows.
   */
  tumbling(
    this: PipelineBuilder<T, NoWindowYet>,
    size: TumblingSize,
    options: EventTimeTumblingOptions,
  ): PipelineBuilder<T, AfterWindow<S>>;
  tumbling(
    this: PipelineBuilder<T, NoWindowYetOneInput>,
    size: TumblingSize,
    options?: TumblingOptions | EventTimeTumblingOptions,
  ): PipelineBuilder<T, AfterWindow<S>>;
  tumbling(
    this: PipelineBuilder<T, NoWindowYet>,
    size: TumblingSize,
    options?: TumblingOptions | EventTimeTumblingOptions,
  ): PipelineBuilder<T, AfterWindow<S>> {
    return this.withWindow(tumbling(size, options));
  }

  /** Event-time windows of `size` starting every `advance`: see `hopping`. */
  hopping(
    this: PipelineBuilder<T, NoWindowYet>,
    size: Duration,
    advance: Duration,
    options: HoppingOptions,
  ): PipelineBuilder<T, AfterWindow<S>> {
    return this.withWindow(hopping(size, advance, options));
  }

  /** A step of `n` messages, or with `{ perKey: true }` a window per key: see `count`. */
  count(
    this: PipelineBuilder<T, NoWindowYetOneInput>,
    n: number,
    options?: CountOptions,
  ): PipelineBuilder<T, AfterWindow<S>> {
    return this.withWindow(count(n, options));
  }

  /**
   * A step ends when a message comes more than `gap` after the latest one (event time); with
   * `grace`, per-key event-time sessions: see `session`.
   */
  session(
    this: PipelineBuilder<T, NoWindowYet>,
    gap: Duration,
    options: SessionOptions,
  ): PipelineBuilder<T, AfterWindow<S>>;
  session(
    this: PipelineBuilder<T, NoWindowYetOneInput>,
    gap: Duration,
    options?: SessionOptions,
  ): PipelineBuilder<T, AfterWindow<S>>;
  session(
    this: PipelineBuilder<T, NoWindowYet>,
    gap: Duration,
    options?: SessionOptions,
  ): PipelineBuilder<T, AfterWindow<S>> {
    return this.withWindow(session(gap, options));
  }

  /**
   * Any window spec, including a user's own step window: `tumbling`, `count`, `session`,
   * `hopping`, `compaction`. With `grace` (or `count(n, { perKey: true })`) a window is an
   * event-time window; see the README's "Event time".
   */
  window(
    this: PipelineBuilder<T, NoWindowYet>,
    spec: WatermarkWindowSpec,
  ): PipelineBuilder<T, AfterWindow<S>>;
  window(
    this: PipelineBuilder<T, NoWindowYetOneInput>,
    spec: AnyWindowSpec,
  ): PipelineBuilder<T, AfterWindow<S>>;
  window(
    this: PipelineBuilder<T, NoWindowYet>,
    spec: AnyWindowSpec,
  ): PipelineBuilder<T, AfterWindow<S>> {
    return this.withWindow(spec);
  }

  /**
   * Event-time windows: the disorder the watermark allows (default 0). The watermark is the
   * latest event time seen less this, and a window closes once it passes the window's end +
   * grace, so a message up to this much older than the latest is never late for that reason.
   */
  maxOutOfOrderness(duration: Duration): PipelineBuilder<T, S> {
    const ms = parseDuration('maxOutOfOrderness', duration, 'non-negative');
    if (this.settings.window !== undefined) checkOutOfOrderness(this.settings.window);
    return this.with({ maxOutOfOrderness: ms });
  }

  /**
   * Event-time windows: when outputs are published (Kafka Streams' emit strategy). 'final'
   * (the default): once per window, when it closes. `{ early: { every: n } }`: also when a
   * message brings an open window's count to a multiple of n (once per message); `{ early: 'each-result' }`: also in every
   * result the job publishes, for each open window that took elements since its last update.
   * Early outputs are marked `final: false`; a window's last output is its final one.
   */
  emit(strategy: 'final' | { readonly early: EarlyUpdates }): PipelineBuilder<T, S> {
    if (this.settings.window !== undefined) checkEmit(this.settings.window);
    if (strategy === 'final') return this.with({ early: undefined });
    const early = (strategy as { early?: unknown } | null)?.early;
    if (early === 'each-result') return this.with({ early });
    const every = (early as { every?: unknown } | undefined)?.every;
    if (typeof every !== 'number' || !Number.isSafeInteger(every) || every < 1) {
      throw new ConfigError(
        'emit',
        "must be 'final', { early: { every: n } } with a whole n >= 1, or { early: 'each-result' }",
        strategy,
      );
    }
    return this.with({ early: { every } });
  }

  /** Groups within a step: one output per key, all in the step's one result. */
  key(fn: (value: T) => string | number): PipelineBuilder<T, AfterEventTimeOrKey<S>> {
    return this.with({ key: requireFunction('key', fn) });
  }

  /**
   * What happens to a message whose event time is before the open window (default 'side'):
   * 'include' folds it into the open window, 'drop' counts it in the result's metadata
   * only, 'side' puts its value in the late section of the open step's result.
   */
  late(policy: LatePolicy): PipelineBuilder<T, S> {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
    if (policy !== 'include' && policy !== 'drop' && policy !== 'side') {
      throw new ConfigError('late policy', "must be 'include', 'drop' or 'side'", policy);
    }
    if (this.settings.window !== undefined) checkLatePolicy(policy, this.settings.window);
    return this.with({ late: policy });
  }

  /**
   * What happens to a message that cannot be decoded, keyed or reduced (default 'stop'):
   * 'stop' ends the job with a ProcessingError naming stream, offset and cause;
   * 'dead-letter' keeps the message whole in the dead-letter section of its step's result,
   * up to `maxDeadLetters` per step.
   */
  onError(policy: ErrorPolicy, options?: DeadLetterOptions): PipelineBuilder<T, S> {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
    if (policy !== 'stop' && policy !== 'dead-letter') {
      throw new ConfigError('error policy', "must be 'stop' or 'dead-letter'", policy);
    }
    if (policy === 'stop' && options !== undefined) {
      throw new ConfigError('onError options', "apply to 'dead-letter' only", options);
    }
    if (policy === 'dead-letter' && this.settings.source instanceof MergedInputs) {
      throw new ConfigError(
        'error policy',
        "must be 'stop' for a job over several inputs (a dead letter of a merge is not placed yet)",
        policy,
      );
    }
    const maxDeadLetters = options?.maxDeadLetters ?? DEFAULT_MAX_DEAD_LETTERS;
    if (!Number.isSafeInteger(maxDeadLetters) || maxDeadLetters < 1) {
      throw new ConfigError('maxDeadLetters', 'must be a positive integer', maxDeadLetters);
    }
    return this.with({ onError: policy, maxDeadLetters });
  }

  /**
   * Folds each key's values: from the first value (`reduce(fn)`) or from `init`. Every key of
   * every step starts from its own `init`: a factory `() => A` is called for each, a plain
   * object is structured-cloned for each (one that cannot be cloned as it is fails here with
   * a ConfigError), so a reducer that mutates its accumulator stays replay-stable.
   */
  reduce(fn: (accumulator: T, value: T) => T): AggregationBuilder<T, T, T>;
  reduce<A>(fn: (accumulator: A, value: T) => A, init: A | (() => A)): AggregationBuilder<T, A, A>;
  reduce<A>(
    fn: (accumulator: A, value: T) => A,
    ...init: [(A | (() => A))?]
  ): AggregationBuilder<T, A, A> {
    requireFunction('reduce function', fn);
    const aggregator =
      init.length === 0
        ? (reduceFirst(fn as unknown as (a: T, v: T) => T) as unknown as Aggregator<T, A, A>)
        : fold(fn, init[0] as A | (() => A));
    return this.aggregate(aggregator);
  }

  /** A full aggregate function: `init`, `add` and `result`, all pure. */
  aggregate<A, R>(aggregator: Aggregator<T, A, R>): AggregationBuilder<T, A, R> {
    for (const name of ['init', 'add', 'result'] as const) {
      // A JavaScript caller may pass anything; the method is only checked here, not called.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition, @typescript-eslint/unbound-method
      requireFunction(`aggregate ${name}`, aggregator?.[name]);
    }
    return new AggregationBuilder(this.checked(), aggregator);
  }

  /**
   * Change-stream compaction: within each step (ended by `count`, `every` or `gap`) keep only
   * the latest value per entity, or fold an entity's updates with `merge`.
   */
  compact(
    this: PipelineBuilder<T, NoWindowYetOneInput>,
    entity: (value: T) => string | number,
    options: CompactionOptions & { merge?: (previous: T, update: T) => T },
  ): AggregationBuilder<T, T, T> {
    const { merge, ...trigger } = options;
    if (merge !== undefined) requireFunction('compact merge', merge);
    return this.window(compaction(trigger)).key(entity).aggregate(latest(merge));
  }

  private withStage<U, Next extends BuilderStage>(
    kind: ValueStage['kind'],
    fn: (value: T) => unknown,
  ): PipelineBuilder<U, Next> {
    requireFunction(kind, fn);
    this.notOnResults(kind, fn);
    this.beforeReaders(kind, fn);
    return new PipelineBuilder<U, Next>({
      ...this.settings,
      readValues: undefined, // refused above; restated for the new value type
      eventTime: undefined,
      key: undefined,
      stages: [...this.settings.stages, { kind, fn: fn as (value: unknown) => unknown }],
    });
  }

  /** Event time and key read the value the earlier methods give, so they must come after. */
  /** A results source reads each message whole into its values: no body decoder, no stages. */
  private notOnResults(method: string, given: unknown): void {
    const { readValues, source } = this.settings;
    if (readValues !== undefined || source instanceof MergedResults) {
      throw new ConfigError(method, 'does not apply to a fromResults source', given);
    }
  }

  private beforeReaders(method: string, given: unknown): void {
    if (this.settings.eventTime !== undefined || this.settings.key !== undefined) {
      throw new ConfigError(
        method,
        'must come before .eventTime() and .key(), which read the value it gives',
        given,
      );
    }
  }

  /** The window methods' one check and change (their `this` types differ by stage). */
  private withWindow<Next extends BuilderStage>(spec: AnyWindowSpec): PipelineBuilder<T, Next> {
    if (this.settings.window !== undefined) {
      throw new ConfigError('window', 'can be chosen once per job', spec.describe());
    }
    if (this.settings.source instanceof MergedInputs && !windowRules(spec).closedByWatermark) {
      throw new ConfigError(
        'window',
        'must be an event-time window closed by the watermark (tumbling, hopping or session with a grace) for a job over several inputs: the merge orders their messages by event time, so a window of contiguous offsets or of counts has no meaning over it',
        spec.describe(),
      );
    }
    if (this.settings.late !== undefined) checkLatePolicy(this.settings.late, spec);
    if (this.settings.maxOutOfOrderness !== undefined) checkOutOfOrderness(spec);
    if (this.settings.early !== undefined) checkEmit(spec);
    return this.with({ window: spec });
  }

  /** A builder with `change`, at stage `Next` (the calling method's return type says which). */
  private with<Next extends BuilderStage>(change: Partial<Settings<T>>): PipelineBuilder<T, Next> {
    return new PipelineBuilder<T, Next>({ ...this.settings, ...change });
  }

  private checked(): Settings<T> & { window: AnyWindowSpec } {
    const { window } = this.settings;
    if (window === undefined) {
      throw new ConfigError(
        'window',
        'must be chosen before the aggregate function (.tumbling(), .count(), .session() or .compact())',
        undefined,
      );
    }
    return { ...this.settings, window };
  }
}

/**
 * The target stage of a job, after `.reduce()` or `.aggregate()`: where its results go
 * (`.to()`, `.toPartitions()`).
 *
 * @example
 * ```ts
 * import { aggregate } from 'stream-windows';
 * import { MemoryBroker } from 'stream-windows/memory';
 *
 * const broker = new MemoryBroker();
 * broker.createStream('readings');
 * broker.createStream('max-per-minute');
 *
 * const perMinute = aggregate<{ celsius: number }>(broker.source('readings'))
 *   .tumbling('1m')
 *   .reduce((max, r) => Math.max(max, r.celsius), -Infinity);
 * // The target stage: a step's outputs as data sections of one message.
 * const job = perMinute.to(broker.target('max-per-minute', { producer: 'max-per-minute' }), {
 *   pack: 'sections',
 * });
 * await job.run({ untilCaughtUp: true });
 * ```
 */
export class AggregationBuilder<T, A, R> {
  constructor(
    private readonly settings: Settings<T> & { window: AnyWindowSpec },
    private readonly aggregator: Aggregator<T, A, R>,
  ) {
    const { window } = settings;
    if (windowRules(window).mergesWindows && aggregator.merge === undefined) {
      throw new ConfigError(
        'aggregate merge',
        `is needed by ${window.describe()}: a message that bridges two sessions of a key merges them (reduce(fn) without init has one; give aggregate({ init, add, result, merge }))`,
        undefined,
      );
    }
  }

  /**
   * Where results go. The target's producer name must be stable and unique per target. Over
   * several inputs, every option but `flush` applies.
   */
  to(target: Target, options: TargetOptions<R> = {}): Runner<T, A, R> {
    const { source } = this.settings;
    if (isPartitioned(source)) {
      throw new ConfigError(
        'to',
        `does not apply to super stream '${source.superStream}': it runs one loop per partition, use .toPartitions()`,
        target.stream,
      );
    }
    return this.runner(source, target, options);
  }

  /**
   * Where the results of a job over a super stream go: one read-process-write loop per
   * partition, each publishing to `target(partition)` under its own producer name
   * (`partition.producer`, `<name>@<partition stream>`) and resuming from its own last
   * publishing id. `options.name` is the job's name (default: the source's consumer group);
   * the other options apply to every loop. Producer names are checked when the job runs:
   * unique per target stream, at most 255 per target stream.
   *
   * A loop publishing under `partition.producer` whose name never published, while the name
   * earlier versions derived (`<name>-<partition stream>`) did, stops with a
   * ProducerRenamedError instead of reading its partition again from the first offset.
   * `allowRereadAfterRename: true` accepts that re-read (the results are published a second
   * time under the new names); default false.
   */
  toPartitions(
    target: (partition: Partition) => Target,
    options: TargetOptions<R> & {
      readonly name?: string;
      readonly allowRereadAfterRename?: boolean;
    } = {},
  ): PartitionedRunner<T, A, R> {
    const { source } = this.settings;
    if (!isPartitioned(source)) {
      throw new ConfigError('toPartitions', 'applies to a super-stream source only', source.stream);
    }
    requireFunction('target', target);
    const { name = source.group, allowRereadAfterRename = false, ...targetOptions } = options;
    if (typeof name !== 'string' || name === '') {
      throw new ConfigError(
        'name',
        "must be a non-empty string (the job's name, the base of its producer names; default: the source's consumer group)",
        name,
      );
    }
    checkReference('name', name); // every producer name starts with it
    if (typeof allowRereadAfterRename !== 'boolean') {
      throw new ConfigError(
        'allowRereadAfterRename',
        'must be true or false',
        allowRereadAfterRename,
      );
    }
    this.runner(source, undefined, targetOptions); // validates the options now
    return new PartitionedRunner(source, name, (partitionSource, partition) => {
      const partitionTarget = target(partition);
      // Only a loop under the derived name was renamed by the upgrade.
      const formerProducer =
        allowRereadAfterRename || partitionTarget.producer !== partition.producer
          ? undefined
          : formerPartitionProducer(name, partition.stream);
      const runner = this.runner(partitionSource, partitionTarget, targetOptions, formerProducer);
      return { runner, target: partitionTarget };
    });
  }

  /**
   * The loop over `source` to `target`, with the options checked; with `target` undefined,
   * only checks them (for `.toPartitions()`, whose targets come with the partitions).
   */
  private runner(
    source: Source | MergedInputs,
    target: Target,
    options: TargetOptions<R>,
    formerProducer?: string,
  ): Runner<T, A, R>;
  private runner(
    source: PartitionedSource,
    target: undefined,
    options: TargetOptions<R>,
  ): undefined;
  private runner(
    source: Source | PartitionedSource | MergedInputs,
    target: Target | undefined,
    options: TargetOptions<R>,
    formerProducer?: string,
  ): Runner<T, A, R> | undefined {
    const superStream = target instanceof SuperStreamTarget;
    const { pack = 'single', format = 'msgpack', encode, route } = options;
    const { allowDefinitionChange = false } = options;
    const maxInFlight = options.maxInFlight ?? (superStream ? 1 : 32);
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
    if (pack !== 'sections' && pack !== 'batch' && pack !== 'single') {
      throw new ConfigError('pack', "must be 'sections', 'batch' or 'single'", pack);
    }
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
    if (format !== 'msgpack' && format !== 'json') {
      throw new ConfigError('format', "must be 'msgpack' or 'json'", format);
    }
    if (options.format !== undefined && pack !== 'single') {
      throw new ConfigError('format', "applies to pack 'single' only", format);
    }
    if (encode !== undefined) {
      requireFunction('encode', encode);
      if (windowRules(this.settings.window).recoversFromResults) {
        throw new ConfigError(
          'encode',
          `cannot be used with ${this.settings.window.describe()}: a restart reads its recovery state from the result format's properties, which your own messages would not carry`,
          'a function',
        );
      }
      if (options.pack !== undefined) {
        throw new ConfigError('pack', 'applies to the result format, not to your own encode', pack);
      }
      if (options.allowDefinitionChange !== undefined) {
        throw new ConfigError(
          'allowDefinitionChange',
          'applies to the result format, not to your own encode: its messages carry no job definition',
          allowDefinitionChange,
        );
      }
    }
    if (typeof allowDefinitionChange !== 'boolean') {
      throw new ConfigError(
        'allowDefinitionChange',
        'must be true or false',
        allowDefinitionChange,
      );
    }
    if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 1) {
      throw new ConfigError('maxInFlight', 'must be a positive integer', maxInFlight);
    }
    if (route !== undefined) requireFunction('route', route);
    if (target !== undefined && superStream !== (route !== undefined)) {
      throw new ConfigError(
        'route',
        superStream
          ? `is needed by super-stream target '${target.stream}': the routing key of a step's result`
          : `applies to a super-stream target only, not to stream '${target.stream}'`,
        route,
      );
    }
    if (superStream && maxInFlight !== 1) {
      throw new ConfigError(
        'maxInFlight',
        'must be 1 with a super-stream target (at most one unconfirmed result across its partitions)',
        maxInFlight,
      );
    }
    const retryDelayMs = timerMs('retryDelayMs', options.retryDelayMs ?? 100, true);
    const maxRetryDelayMs = timerMs(
      'maxRetryDelayMs',
      options.maxRetryDelayMs ?? Math.max(5_000, retryDelayMs),
    );
    if (maxRetryDelayMs < retryDelayMs) {
      throw new ConfigError(
        'maxRetryDelayMs',
        `must be at least retryDelayMs (${retryDelayMs} ms)`,
        maxRetryDelayMs,
      );
    }
    const warnAfterRetries = checkWarnAfterRetries(options.warnAfterRetries);
    const { caughtUp, idleMs } = flushSettings(options.flush, source);
    if (target === undefined || isPartitioned(source)) return undefined;
    const { window } = this.settings;
    const described = window.describe();
    const inputs = source instanceof MergedInputs ? source.inputs.map((s) => s.stream) : undefined;
    const definition = jobDefinition({
      source: source.stream,
      ...(inputs === undefined ? {} : { inputs }),
      window: described,
      ...(windowRules(window).watermark
        ? { maxOutOfOrderness: this.settings.maxOutOfOrderness ?? 0 }
        : {}),
    });
    const metadata = {
      source: source.stream,
      producer: target.producer,
      window: described,
      definition,
    };
    return new Runner({
      source,
      target,
      processor: this.processorConfig(source, window, inputs),
      encode:
        encode === undefined
          ? (result, { previous, maxWriteBytes }) =>
              encodeStep(result, metadata, pack, format, maxWriteBytes, previous)
          : ownEncoding(userEncoder(encode)),
      maxInFlight,
      route,
      retryDelayMs,
      maxRetryDelayMs,
      warnAfterRetries,
      logger: checkLogger('logger', options.logger),
      definition:
        encode === undefined
          ? { current: definition, allowChange: allowDefinitionChange }
          : undefined,
      formerProducer,
      flush: { caughtUp, idleMs, resultFormat: encode === undefined },
    });
  }

  private processorConfig(
    source: Source | MergedInputs,
    window: AnyWindowSpec,
    inputs: readonly string[] | undefined,
  ): ProcessorConfig<T, A, R> {
    const { settings } = this;
    const common = {
      stream: source.stream,
      decode: bodyDecoder(settings.format, settings.schema),
      readValues: settings.readValues,
      stages: settings.stages,
      eventTime: settings.eventTime,
      key: settings.key,
      aggregator: this.aggregator,
      onError: settings.onError,
      maxDeadLetters: settings.maxDeadLetters,
    };
    if (inputs === undefined) return processorConfig(common, window, settings);
    // Each fromResults input's values are the job's T: `aggregate(MergedResults<T>)` typed them.
    const inputValues =
      source instanceof MergedResults
        ? (source.decoders as readonly MessageValuesDecoder<T>[])
        : undefined;
    return processorConfig(common, window, settings, { inputs, inputValues });
  }
}

/**
 * Where a `.transform()` job writes: one target message per source message that passes.
 *
 * @example
 * ```ts
 * import { aggregate } from 'stream-windows';
 * import { MemoryBroker } from 'stream-windows/memory';
 *
 * const broker = new MemoryBroker();
 * broker.createStream('payments');
 * broker.createStream('redacted');
 *
 * // One target message per source message, published under its source offset's id.
 * const job = aggregate<{ card: string; amount: number }>(broker.source('payments'))
 *   .transform((p) => Buffer.from(JSON.stringify({ ...p, card: p.card.slice(-4) })))
 *   .to(broker.target('redacted', { producer: 'redact' }));
 * await job.run({ untilCaughtUp: true });
 * ```
 */
export class TransformBuilder {
  constructor(
    private readonly job: AggregationBuilder<EncodedBodies, EncodedBodies, EncodedBodies>,
  ) {}

  /**
   * Options as `AggregationBuilder.to`, but `pack`, `encode` (the transform's), `flush` and
   * `allowDefinitionChange` (user messages carry no job definition).
   */
  to(
    target: Target,
    options: Omit<TargetOptions, 'pack' | 'encode' | 'flush' | 'allowDefinitionChange'> = {},
  ): Runner<EncodedBodies, EncodedBodies, EncodedBodies> {
    // A flush would publish only a tail of filtered messages: a step without an output, which
    // has no user message to write.
    const { flush } = options as TargetOptions;
    if (flush !== undefined) {
      throw new ConfigError(
        'flush',
        'does not apply to a transform: each message that passes is written at once, nothing waits for a flush',
        flush,
      );
    }
    // A count(1) step holds one output: the bodies of its one message that passed.
    return this.job.to(target, {
      ...options,
      encode: (result) => (result.outputs[0] as KeyedOutput<EncodedBodies>).value,
    });
  }
}

/** Checked by `.late()` and by the window methods, whichever comes second. */
function checkLatePolicy(policy: LatePolicy, window: AnyWindowSpec): void {
  const rules = windowRules(window);
  if (!rules.lateMessages) {
    throw new ConfigError(
      'late policy',
      `applies only to windows with event-time bounds, not ${window.describe()}`,
      policy,
    );
  }
  if (policy === 'include' && !rules.includesLate) {
    throw new ConfigError(
      'late policy',
      `must be 'drop' or 'side' for ${window.describe()}: its late messages belong to windows already published`,
      policy,
    );
  }
}

/** Checked by `.maxOutOfOrderness()` and by the window methods, whichever comes second. */
function checkOutOfOrderness(window: AnyWindowSpec): void {
  if (!windowRules(window).closedByWatermark) {
    throw new ConfigError(
      'maxOutOfOrderness',
      `applies only to event-time windows with a grace (tumbling, hopping or session with grace), not ${window.describe()}`,
      window.describe(),
    );
  }
}

/** Checked by `.emit()` and by the window methods, whichever comes second. */
function checkEmit(window: AnyWindowSpec): void {
  if (!windowRules(window).earlyUpdates) {
    throw new ConfigError(
      'emit',
      `applies only to event-time windows (with a grace, or count per key), not ${window.describe()}: a step window publishes each step once`,
      window.describe(),
    );
  }
}

/**
 * The flush options, checked. An idle flush is decided by one instance's clock: two instances
 * reading at once (split brain) would end steps at different offsets, and the broker would
 * store both, so it needs a single active consumer source, or the user's word (`oneInstance`).
 */
function flushSettings(
  flush: FlushOptions | undefined,
  source: Source | PartitionedSource | MergedInputs,
): {
  caughtUp: boolean;
  idleMs: number | undefined;
} {
  if (flush === undefined) return { caughtUp: false, idleMs: undefined };
  if (source instanceof MergedInputs) {
    throw new ConfigError(
      'flush',
      'does not apply to a job over several inputs yet: a flush is a wall-clock decision its merge does not record',
      flush,
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
  if (typeof flush !== 'object' || flush === null) {
    throw new ConfigError('flush', 'must be an object { caughtUp?, idleMs?, oneInstance? }', flush);
  }
  const { caughtUp = false, oneInstance = false } = flush;
  if (typeof caughtUp !== 'boolean') {
    throw new ConfigError('flush caughtUp', 'must be true or false', caughtUp);
  }
  if (typeof oneInstance !== 'boolean') {
    throw new ConfigError('flush oneInstance', 'must be true or false', oneInstance);
  }
  const idleMs = flush.idleMs === undefined ? undefined : timerMs('idleMs', flush.idleMs);
  if (oneInstance && idleMs === undefined) {
    throw new ConfigError('flush oneInstance', 'applies to idleMs only', oneInstance);
  }
  if (idleMs !== undefined && !oneInstance && source.group === undefined) {
    const stream = isPartitioned(source) ? source.superStream : source.stream;
    throw new ConfigError(
      'idleMs',
      `needs one instance of the job reading '${stream}' at a time: two at once would each flush by its own clock, at different offsets, and count messages twice. Read it as a single active consumer (singleActive), or, if you run one instance only, say so with flush: { idleMs, oneInstance: true }`,
      idleMs,
    );
  }
  return { caughtUp, idleMs };
}

function isPartitioned(
  source: Source | PartitionedSource | MergedInputs,
): source is PartitionedSource {
  return 'superStream' in source && typeof source.partitions === 'function';
}

function requireFunction<F>(parameter: string, fn: F): F {
  if (typeof fn !== 'function') throw new ConfigError(parameter, 'must be a function', fn);
  return fn;
}
