// Random scenarios shared by the property tests and the differential test: a source stream
// (keys, values, event times including out-of-order ones, undecodable messages, chunking)
// and a job configuration (window kind, keys, late and error policies, packing).
import fc from 'fast-check';
import { aggregate, jsonMessage, type LatePolicy, type PackMode } from '../../../src/index.js';
import type {
  AggregationBuilder,
  CompactionOptions,
  Partition,
  PartitionedRunner,
  PartitionedSource,
  PipelineBuilder,
  Runner,
  SingleFormat,
  Source,
  Target,
  TargetOptions,
} from '../../../src/index.js';

export interface Event {
  readonly key: string;
  readonly value: number;
  readonly t: number;
}

export type SourceEntry = { readonly event: Event } | { readonly garbage: Uint8Array };

export interface SourceSpec {
  /** Messages grouped in chunks, each chunk with its broker timestamp. */
  readonly chunks: readonly {
    readonly timestamp: number;
    readonly entries: readonly SourceEntry[];
  }[];
}

export type WindowChoice =
  | { readonly kind: 'tumbling'; readonly size: number }
  | { readonly kind: 'count'; readonly n: number }
  | { readonly kind: 'session'; readonly gap: number }
  | { readonly kind: 'compact-count'; readonly n: number }
  | { readonly kind: 'compact-every'; readonly size: number }
  | { readonly kind: 'compact-gap'; readonly gap: number };

export interface JobSpec {
  readonly window: WindowChoice;
  readonly keyed: boolean;
  readonly late: LatePolicy;
  readonly deadLetter: boolean;
  readonly eventTimeFrom: 'value' | 'creation-time';
  readonly pack: PackMode;
  /** Set with pack 'single' only. */
  readonly format?: SingleFormat;
}

/** Every way a target can be packed: each packing, and 'single' in each of its formats. */
export const packings: readonly Pick<JobSpec, 'pack' | 'format'>[] = [
  { pack: 'sections' },
  { pack: 'batch' },
  { pack: 'single', format: 'msgpack' },
  { pack: 'single', format: 'json' },
];

/** A packing's name in test titles, e.g. 'single json'. */
export const packingName = (spec: Pick<JobSpec, 'pack' | 'format'>): string =>
  spec.format === undefined ? spec.pack : `${spec.pack} ${spec.format}`;

const BASE_TIME = Date.UTC(2026, 0, 1);

const eventArb = fc.record({
  key: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
  value: fc.integer({ min: -1000, max: 1000 }),
  // Mostly forward in time, sometimes backwards (out of order), sometimes a long pause.
  step: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 1500 }) },
    { weight: 2, arbitrary: fc.integer({ min: -4000, max: -1 }) },
    { weight: 1, arbitrary: fc.integer({ min: 5000, max: 20000 }) },
  ),
});

/**
 * A source stream. Given `maxLength`, lengths spread over the whole range (`size: 'max'`);
 * without it, at most 60 messages at fast-check's default size (about 10), as the
 * differential test against the real broker wants them.
 */
export function sourceArb(options: {
  garbage: boolean;
  minLength?: number;
  maxLength?: number;
}): fc.Arbitrary<SourceSpec> {
  const entryArb = options.garbage
    ? fc.oneof(
        { weight: 12, arbitrary: eventArb.map((e) => ({ kind: 'event' as const, e })) },
        {
          weight: 1,
          arbitrary: fc.uint8Array({ maxLength: 12 }).map((g) => ({ kind: 'garbage' as const, g })),
        },
      )
    : eventArb.map((e) => ({ kind: 'event' as const, e }));
  return fc
    .record({
      entries: fc.array(entryArb, {
        minLength: options.minLength ?? 0,
        maxLength: options.maxLength ?? 60,
        ...(options.maxLength === undefined ? {} : { size: 'max' as const }),
      }),
      chunkSizes: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 60 }),
    })
    .map(({ entries, chunkSizes }) => {
      let t = BASE_TIME;
      const all: SourceEntry[] = entries.map((entry) => {
        if (entry.kind === 'garbage') return { garbage: entry.g };
        t += entry.e.step;
        return { event: { key: entry.e.key, value: entry.e.value, t } };
      });
      const chunks: { timestamp: number; entries: SourceEntry[] }[] = [];
      for (let i = 0, c = 0; i < all.length; c++) {
        const size = chunkSizes[c % chunkSizes.length] as number;
        chunks.push({
          timestamp: BASE_TIME + 1000 * chunks.length,
          entries: all.slice(i, i + size),
        });
        i += size;
      }
      return { chunks };
    });
}

/** One window of each kind, for the tests that run each kind once on both brokers. */
export const EVERY_WINDOW_KIND: readonly WindowChoice[] = [
  { kind: 'tumbling', size: 3000 },
  { kind: 'count', n: 4 },
  { kind: 'session', gap: 1500 },
  { kind: 'compact-count', n: 5 },
  { kind: 'compact-every', size: 4000 },
  { kind: 'compact-gap', gap: 2000 },
];

export const windowArb: fc.Arbitrary<WindowChoice> = fc.oneof(
  fc.integer({ min: 1, max: 10 }).map((s) => ({ kind: 'tumbling' as const, size: s * 1000 })),
  fc.integer({ min: 1, max: 7 }).map((n) => ({ kind: 'count' as const, n })),
  fc.integer({ min: 1, max: 6 }).map((g) => ({ kind: 'session' as const, gap: g * 500 })),
  fc.integer({ min: 1, max: 7 }).map((n) => ({ kind: 'compact-count' as const, n })),
  fc.integer({ min: 1, max: 10 }).map((s) => ({ kind: 'compact-every' as const, size: s * 1000 })),
  fc.integer({ min: 1, max: 6 }).map((g) => ({ kind: 'compact-gap' as const, gap: g * 500 })),
);

export function jobArb(options: { deadLetter: boolean }): fc.Arbitrary<JobSpec> {
  return fc
    .record({
      window: windowArb,
      keyed: fc.boolean(),
      late: fc.constantFrom<LatePolicy>('include', 'drop', 'side'),
      deadLetter: fc.constant(options.deadLetter),
      eventTimeFrom: fc.constantFrom<'value' | 'creation-time'>('value', 'creation-time'),
      packing: fc.constantFrom(...packings),
    })
    .map(({ packing, ...spec }) => ({ ...spec, ...packing }));
}

/** The encoded messages of each chunk, as a producer would write them. */
export function encodeSource(spec: SourceSpec): { timestamp: number; messages: Uint8Array[] }[] {
  return spec.chunks.map((chunk) => ({
    timestamp: chunk.timestamp,
    messages: chunk.entries.map((entry) =>
      'garbage' in entry
        ? entry.garbage
        : jsonMessage(entry.event, { creationTime: entry.event.t }),
    ),
  }));
}

/** What a job may add to a scenario: filters and maps first, its own encoder last. */
export interface JobExtras {
  readonly prepare?: (pipeline: PipelineBuilder<Event>) => PipelineBuilder<Event>;
  readonly encode?: TargetOptions['encode'];
  /** Results awaiting their confirm at once (the runner's default when not given). */
  readonly maxInFlight?: number;
  /** Publishing open windows early (none when not given). */
  readonly flush?: TargetOptions['flush'];
}

/** Builds the job a scenario describes, over any broker's ports. */
export function buildJob(
  spec: JobSpec,
  source: Source,
  target: Target,
  extras: JobExtras = {},
): Runner<Event, unknown, unknown> {
  const { steps, output } = scenarioSteps(spec, source, extras);
  return steps.to(target, output);
}

/**
 * The same job over a super stream, named `name`: one loop per partition, each publishing to
 * `target(partition)` under the partition's producer name.
 */
export function buildPartitionedJob(
  spec: JobSpec,
  source: PartitionedSource,
  target: (partition: Partition) => Target,
  name: string,
): PartitionedRunner<Event> {
  const { steps, output } = scenarioSteps(spec, source, {});
  return steps.toPartitions(target, { ...output, name });
}

/** A scenario's job up to its target, and the target options it is written with. */
function scenarioSteps(
  spec: JobSpec,
  source: Source | PartitionedSource,
  extras: JobExtras,
): { steps: AggregationBuilder<Event, unknown, unknown>; output: TargetOptions } {
  let pipeline = extras.prepare?.(aggregate<Event>(source)) ?? aggregate<Event>(source);
  const common = { retryDelayMs: 0, maxInFlight: extras.maxInFlight, flush: extras.flush };
  const output: TargetOptions =
    extras.encode === undefined
      ? { pack: spec.pack, format: spec.format, ...common }
      : { encode: extras.encode, ...common };
  if (spec.eventTimeFrom === 'value') pipeline = pipeline.eventTime((e) => e.t);
  if (spec.deadLetter) pipeline = pipeline.onError('dead-letter');
  const steps = windowedSteps(pipeline, spec, {
    key: (e) => e.key,
    merge: (a, b) => ({ key: b.key, value: a.value + b.value, t: b.t }),
    aggregate: (windowed) =>
      windowed.aggregate({
        init: () => ({ sum: 0, min: Infinity, max: -Infinity }),
        add: (acc, e) => ({
          sum: acc.sum + e.value,
          min: Math.min(acc.min, e.value),
          max: Math.max(acc.max, e.value),
        }),
        result: (acc) => acc,
      }),
  });
  return { steps, output };
}

/** What a stage of a scenario sets on its pipeline besides what it folds: window, key, lateness. */
export type WindowedSpec = Pick<JobSpec, 'window' | 'keyed' | 'late'>;

/** What a stage folds: its key, how a compaction merges two values, and its aggregation. */
export interface Folding<T, A, R> {
  readonly key: (value: T) => string;
  readonly merge: (previous: T, update: T) => T;
  readonly aggregate: (pipeline: PipelineBuilder<T>) => AggregationBuilder<T, A, R>;
}

/**
 * `pipeline` with the window, lateness and key of `spec` (a compaction keys and merges by
 * itself), folded as `folding` says and written to `target`: every stage of a scenario, of
 * whatever value type, is built the same way.
 */
export function windowedJob<T, A, R>(
  pipeline: PipelineBuilder<T>,
  spec: WindowedSpec,
  target: Target,
  output: TargetOptions,
  folding: Folding<T, A, R>,
): Runner<T, unknown, unknown> {
  return windowedSteps(pipeline, spec, folding).to(target, output);
}

/** `windowedJob` up to its target. */
function windowedSteps<T, A, R>(
  pipeline: PipelineBuilder<T>,
  spec: WindowedSpec,
  folding: Folding<T, A, R>,
): AggregationBuilder<T, unknown, unknown> {
  const w = spec.window;
  if (w.kind !== 'count' && w.kind !== 'compact-count') pipeline = pipeline.late(spec.late);
  const compact = (trigger: CompactionOptions) =>
    pipeline.compact(folding.key, {
      ...trigger,
      merge: folding.merge,
    }) as AggregationBuilder<T, unknown, unknown>;
  switch (w.kind) {
    case 'compact-count':
      return compact({ count: w.n });
    case 'compact-every':
      return compact({ every: w.size });
    case 'compact-gap':
      return compact({ gap: w.gap });
    case 'tumbling':
      pipeline = pipeline.tumbling(w.size);
      break;
    case 'count':
      pipeline = pipeline.count(w.n);
      break;
    case 'session':
      pipeline = pipeline.session(w.gap);
      break;
  }
  if (spec.keyed) pipeline = pipeline.key(folding.key);
  return folding.aggregate(pipeline) as AggregationBuilder<T, unknown, unknown>;
}
