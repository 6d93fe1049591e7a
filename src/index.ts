// stream-windows: effectively-once windowed aggregation on RabbitMQ Streams.
// This list is the public API; everything else under src/ is internal and may change.
// Broker adapters have their own entry points: 'stream-windows/memory' (the embedded
// broker) and 'stream-windows/rabbitmq'.

// Building and running a job.
export {
  aggregate,
  PipelineBuilder,
  AggregationBuilder,
  TransformBuilder,
  type TargetOptions,
  type FlushOptions,
  type DeadLetterOptions,
} from './dsl/pipeline.js';
export { Runner, type ResultOf } from './engine/runner.js';
// A job over several inputs: `aggregate(mergeInputs([a, b]))`, merged by event time.
export { mergeInputs, type MergeOptions } from './dsl/merge-inputs.js';
export { MergedInputs } from './engine/merge/merged-inputs.js';
export { MergedResults } from './engine/merge/merged-results.js';
export type {
  MergeRecord,
  InputRecord,
  InputFloor,
  MergeKey,
} from './result-format/merge-record.js';
export type { RunOptions, RunSummary } from './api/run-options.js';
// Running a job as a service: stop on SIGTERM/SIGINT, let confirms land, close, exit 128 + N.
export {
  runUntilSignal,
  type RunUntilSignalOptions,
  type StoppableJob,
} from './dsl/run-until-signal.js';
// Scaling out: one loop per partition of a super stream (`.toPartitions()`), and a target
// that routes each step's one write to one partition of a super stream.
export {
  PartitionedRunner,
  partitionProducer,
  type Partition,
  type PartitionedRunOptions,
  type PartitionedRunSummary,
  type PartitionListener,
} from './partitioning/partitioned-runner.js';
// Every core: a partitioned job's partitions spread over worker threads, each building the
// job from a module (`new PartitionWorkers(new URL('./job.js', import.meta.url))`).
export {
  PartitionWorkers,
  type PartitionedJob,
  type PartitionWorker,
  type PartitionWorkerJob,
  type PartitionWorkerModule,
  type PartitionWorkersOptions,
} from './partitioning/partition-workers.js';
export {
  superStreamTarget,
  SuperStreamTarget,
  type SuperStreamTargetOptions,
} from './partitioning/super-stream-target.js';
// Observing a job: `runner.on(name, listener)`, and the logger option of `.to()`.
export {
  JOB_EVENT_NAMES,
  type JobEventMap,
  type JobEventName,
  type JobListener,
  type ListenerOptions,
} from './api/job-events.js';
export type { Logger } from './common/logger.js';
export type { Aggregator } from './common/aggregator.js';
export type { LatePolicy, ErrorPolicy, EarlyUpdates } from './api/policies.js';
export type { ValueFormat } from './api/value-decoder.js';
export {
  fromResults,
  ResultsSource,
  type ResultsSourceOptions,
  type OutputValue,
  type LateValue,
  type DeadLetterValue,
} from './result-format/results-source.js';
export type { StandardSchemaV1 } from './api/standard-schema.js';
export type { EncodedBodies } from './result-format/user-encoder.js';

// Window kinds, for `.window(spec)` and for users writing their own.
export {
  tumbling,
  count,
  session,
  hopping,
  compaction,
  Placement,
  TriggerResult,
  neverTrigger,
  type WindowSpec,
  type WindowAssigner,
  type Trigger,
  type TumblingOptions,
  type EventTimeTumblingOptions,
  type HoppingOptions,
  type CountOptions,
  type SessionOptions,
  type EventTimeWindowSpec,
  type WatermarkWindowSpec,
  type CompactionOptions,
  type Duration,
  type TumblingSize,
  type WeekDay,
} from './windows/index.js';
export type { Key, KeyedOutput } from './common/keyed-output.js';

// Super-stream routing as the Java and JS RabbitMQ clients hash a routing key to a partition.
export {
  partitionFor,
  partitionIndexFor,
  murmur3x86,
  ROUTING_SEED,
} from './common/partition-routing.js';

// Reading what a job wrote: the result wire format (see the README).
export { decodeResult } from './result-format/result-decoder.js';
export {
  ResultProperty,
  RESULT_FORMAT_VERSION,
  type DecodedResult,
  type OpenCountSlices,
  type ResultOutput,
  type ResultMetadata,
  type PackMode,
  type SingleFormat,
} from './result-format/result-format.js';
export type { StepResult, DeadLetter, RecoveryState } from './result-format/step-result.js';
// What a producer's publishing id says: the step it was written for, and which of its writes.
export {
  readStepId,
  lastWriteId,
  writeId,
  wholeStepOffset,
  MAX_STEP_WRITES,
  type StepId,
} from './result-format/publishing-id.js';
export {
  readResults,
  type ReadResultsOptions,
  type ReadResult,
} from './result-format/result-reader.js';

// From a database into a stream: rows a service writes in its own transactions
// (`writeOutbox`), published by a relay exactly once, each key's rows in commit order.
export {
  outboxRelay,
  OutboxRelay,
  type OutboxRelayOptions,
  type RelayBroker,
  type RelayTarget,
  type RelayPartition,
} from './outbox/outbox-relay.js';
export type { RelayBacklog } from './outbox/relay-backlog.js';
export {
  writeOutbox,
  writeOutboxAll,
  type OutboxStatements,
  type WriteOutboxOptions,
} from './outbox/outbox-write.js';
export { type OutboxEvent, type OutboxBody } from './outbox/outbox-event.js';
export {
  createOutboxTable,
  outboxTableDdl,
  DEFAULT_OUTBOX_TABLE,
  type OutboxCursor,
} from './outbox/outbox-table.js';
export { OutboxProperty } from './outbox/outbox-message.js';
export {
  relayPublishingId,
  readRelayPublishingId,
  MAX_ROWS_PER_TRANSACTION,
  type RelayPosition,
} from './outbox/relay-publishing-id.js';
export type { RelayEventMap, RelayEventName, RelayRunSummary } from './outbox/relay-events.js';

// Into a database: each batch applied in one transaction with the sink's checkpoint. The
// database adapters have their own entry points: 'stream-windows/postgres' (pg) and
// 'stream-windows/pglite' (in-process, nothing to install).
export {
  databaseSink,
  DatabaseSink,
  type DatabaseSinkOptions,
  type SinkRunSummary,
  type SinkPosition,
} from './sink/database-sink.js';
export type { SinkEventMap, SinkEventName } from './sink/sink-events.js';
export type { SinkShape, SinkBatch, SinkMessage } from './sink/sink-shape.js';
export type { SinkFormat } from './sink/message-decoder.js';
export { eachBatch, type EachBatchOptions } from './sink/each-batch.js';
export { windowOutputs, type WindowOutputsOptions } from './sink/window-outputs.js';
export { latestState, type LatestStateOptions } from './sink/latest-state.js';
export { processedIds, type ProcessedIdsOptions } from './sink/processed-ids.js';
export type { ResultSideOptions } from './sink/result-side-tables.js';
export type { SinkDatabase, SinkTransaction } from './database/sink-database.js';
export { DEFAULT_CHECKPOINT_TABLE } from './sink/checkpoint-table.js';

// Writing source messages (tests, demos, producers without a client of their own).
export { sourceMessage, jsonMessage, type SourceMessageOptions } from './codecs/source-message.js';

// The ports a broker adapter implements.
export type {
  Source,
  SourceChunk,
  Target,
  ReadStart,
  PartitionedSource,
  GroupObserver,
  ResultWhere,
} from './ports/ports.js';
export { resolveReadStart } from './ports/read-start.js';
export { writeSize, maxWriteBytes, DEFAULT_FRAME_MAX } from './ports/write-size.js';

// Errors: every one names what went wrong and where.
export {
  StreamWindowsError,
  ConfigError,
  ProcessingError,
  MultiSectionMessageError,
  ResultMessageError,
  OutputTooLargeError,
  DeadLetterLimitError,
  SchemaValidationError,
  PublishError,
  ResumePointError,
  RecoveryError,
  JobDefinitionError,
  DefinitionChangeRefusedError,
  ProducerRenamedError,
  SourceError,
  RetentionGapError,
  SourceDeactivatedError,
  BrokerUnavailableError,
  AccessRefusedError,
  NotAResultError,
  ClientInternalsError,
  PartitionWorkerError,
  SinkError,
  SinkTableError,
  OutboxOrderError,
  RelayError,
  isRetriable,
  type ProcessingStage,
  type SinkStage,
  type RelayStage,
} from './common/errors.js';
export { CodecError } from './codecs/codec-error.js';
