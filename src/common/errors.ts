import { jsonText } from './json-text.js';
import { redactSecrets } from './redact-secrets.js';

/**
 * Every error the library throws on purpose. Each names what went wrong, where (stream and
 * offset when there is one) and what happens next, so a log line is enough to act on. No
 * message carries a password: one naming a connection URL or string shows its user, never its
 * password (`rabbitmq-stream://guest:***@host:5552/`).
 */
export class StreamWindowsError extends Error {
  constructor(message?: string, options?: ErrorOptions) {
    // Here, before Error writes the message into the stack as well.
    super(message === undefined ? undefined : redactSecrets(message), options);
  }

  /**
   * The class's name (`'ConfigError'`, `'SourceError'`, ...), as `error.name` and log lines show
   * it.
   */
  override readonly name: string = 'StreamWindowsError';
  /**
   * What went wrong, as a stable string to branch on or alert on (`error.code ===
   * 'RETENTION_GAP'`): one per error class, listed in the README's "Errors" table. The
   * broker's numeric response code, where there is one, is `responseCode`.
   */
  readonly code: string = 'STREAM_WINDOWS_ERROR';
}

/**
 * rabbitmq-stream-js-client's internals are not what a workaround under src/rabbitmq/gaps/
 * expects (a field moved, a frame decoded differently): this client version needs that
 * workaround updated. Not retriable.
 */
export class ClientInternalsError extends StreamWindowsError {
  override readonly name = 'ClientInternalsError';
  override readonly code = 'CLIENT_INTERNALS_CHANGED';
}

/** A factory or builder was given a setting that breaks a rule; nothing has run yet. */
export class ConfigError extends StreamWindowsError {
  override readonly name = 'ConfigError';
  override readonly code = 'CONFIG_INVALID';
  constructor(
    /**
     * The factory, call or option given the bad setting, as the message starts: `'window'`, `'late
     * policy'`.
     */
    readonly parameter: string,
    rule: string,
    /**
     * The setting as given, for the message and for a caller that reports it itself; a string
     * with its passwords masked (a connection URL: `amqp://guest:***@host/`).
     */
    readonly given: unknown,
  ) {
    super(`${parameter} ${rule}, given: ${formatGiven(given)}`);
    if (typeof given === 'string') this.given = redactSecrets(given);
  }
}

/**
 * Which stage of the hot path rejected a source message. 'filter' and 'map' are the job's
 * `.filter()` and `.map()` functions. 'result' (an aggregate's `result` threw for a key) and
 * 'encode' (the step's result could not be encoded) and 'route' (the `route` option of a
 * super-stream target threw or returned no string) are reported at the step's last offset.
 */
export type ProcessingStage =
  'decode' | 'filter' | 'map' | 'event-time' | 'key' | 'reduce' | 'result' | 'encode' | 'route';

/**
 * A source message could not be processed. The job stops (nothing after the last
 * published step is lost: a restart re-reads from the resume point), unless the job was
 * built with `.onError('dead-letter')`, in which case the message goes into the
 * dead-letter section of its step's result instead.
 */
export class ProcessingError extends StreamWindowsError {
  override readonly name = 'ProcessingError';
  override readonly code = 'PROCESSING_FAILED';
  constructor(
    /** The source stream of the message. */
    readonly stream: string,
    /** The message's offset in `stream`. */
    readonly offset: bigint,
    /** Which stage rejected it: 'decode', 'map', 'key', 'reduce', ... (see `ProcessingStage`). */
    readonly stage: ProcessingStage,
    /** What the stage threw (or the decoder's error), as thrown. */
    override readonly cause: unknown,
    /**
     * Whether `stream-windows skip` can step over it: set only where the job's error policy
     * stopped on a message that failed on its own (see engine/rejections.ts), never for a
     * failure that depends on the job's state, its whole step or its setup.
     */
    readonly skippable = false,
    /**
     * The `stream-windows skip` command that steps the job over this message, set on the error
     * a job stops with when the skip can be asked for (and then named by the message too).
     */
    readonly skipCommand?: string,
  ) {
    super(
      `${stage} failed for message at offset ${offset} of stream '${stream}': ${describe(cause)}` +
        (skipCommand === undefined
          ? ''
          : `; once it is known to be bad input, '${skipCommand}' lets the next start dead-letter it`),
      { cause },
    );
  }
}

/**
 * A job that reads one value per message met a message with several data sections (a
 * result of another job, say): reading only the first would lose the others without a word.
 * The cause of a ProcessingError at stage 'decode'; read results with `fromResults`.
 */
export class MultiSectionMessageError extends StreamWindowsError {
  override readonly name = 'MultiSectionMessageError';
  override readonly code = 'MULTI_SECTION_MESSAGE';
  constructor(
    /** The number of data sections the message has. */
    readonly sections: number,
  ) {
    super(
      `the message has ${sections} data sections and the job's decoder reads one value per ` +
        `message; read results of another job with fromResults(source)`,
    );
  }
}

/**
 * A job that reads one value per message failed to decode a message that is a result of
 * another job (it carries the result format's `sw-format` property): the cause of a
 * ProcessingError at stage 'decode', in place of the decoder's own error (a JSON syntax error
 * on a msgpack result, say), which would not say what the message is.
 */
export class ResultMessageError extends StreamWindowsError {
  override readonly name = 'ResultMessageError';
  override readonly code = 'RESULT_MESSAGE';
  constructor(
    /** The result format the message names (its `sw-format` property). */
    readonly format: string,
    /** The decoder's own error. */
    override readonly cause: unknown,
    /** Who read it: a job, or a database sink (which reads results with `decode: 'result'`). */
    reader: 'job' | 'sink' = 'job',
  ) {
    super(
      `the message is a result of another job (result format '${format}'), which the ` +
        `${reader}'s decoder cannot read as one value (${describe(cause)}); read results of ` +
        `another job with ` +
        (reader === 'job'
          ? 'fromResults(source)'
          : "decode: 'result' (or the windowOutputs and latestState shapes)"),
      { cause },
    );
  }
}

/**
 * A decoded value failed the job's schema (`.decode(format, schema)`): the cause of the
 * message's 'decode' ProcessingError, or of its dead letter. `issues` are the validator's,
 * each "path: message" (the message alone for the value as a whole).
 */
export class SchemaValidationError extends StreamWindowsError {
  override readonly name = 'SchemaValidationError';
  override readonly code = 'SCHEMA_VALIDATION_FAILED';
  constructor(
    /** The validator's issues, each "path: message" (the message alone for the whole value). */
    readonly issues: readonly string[],
  ) {
    super(`value does not match the schema: ${issues.join('; ')}`);
  }
}

/** A step's result is larger than the target accepts in one write; the job stops before publishing. */
export class OutputTooLargeError extends StreamWindowsError {
  override readonly name = 'OutputTooLargeError';
  override readonly code = 'OUTPUT_TOO_LARGE';
  constructor(
    /** The source stream the step read. */
    readonly stream: string,
    /** The first source offset of the step. */
    readonly firstOffset: bigint,
    /** The last source offset of the step. */
    readonly lastOffset: bigint,
    /** The size of the write that does not fit, in bytes. */
    readonly bytes: number,
    /** The most bytes the target accepts in one write. */
    readonly limit: number,
    /**
     * What makes one write too large, since a step's result otherwise spans as many writes as
     * it takes (per-key count windows' recovery state included): one `output` or one
     * `dead-letter` alone; or the job's own `encode` (`own-encoding`), whose bodies are one
     * write per step.
     */
    readonly holds: 'output' | 'dead-letter' | 'own-encoding' = 'output',
  ) {
    super(
      `result of offsets ${firstOffset}..${lastOffset} of stream '${stream}' needs a write of ${bytes} bytes, ` +
        `over the target's limit of ${limit} bytes per write; nothing was published: ` +
        {
          output:
            "one output alone is larger than a write: make its value smaller, or raise the broker's frame_max",
          'dead-letter':
            "one dead letter alone (a whole source message and its error) is larger than a write: raise the broker's frame_max, or fix what makes it fail",
          'own-encoding':
            "the job's own encode makes each step one write: return smaller bodies, or leave encode out so that the library's result format spans writes",
        }[holds],
    );
  }
}

/**
 * Under `.onError('dead-letter')`, a step would hold more dead letters than `maxDeadLetters`.
 * So many failures in one step are rarely bad input and usually a bug in the job's decode,
 * event-time or key function: the job stops at the first one over the bound (the steps
 * before are published; nothing of this one is) instead of burying the stream in dead
 * letters, and a restart after the fix re-reads the step.
 */
export class DeadLetterLimitError extends StreamWindowsError {
  override readonly name = 'DeadLetterLimitError';
  override readonly code = 'DEAD_LETTER_LIMIT';
  constructor(
    /** The source stream of the step. */
    readonly stream: string,
    /** The first source offset of the step. */
    readonly firstOffset: bigint,
    /** The offset of the message that went over the bound. */
    readonly offset: bigint,
    /** The bound: onError's `maxDeadLetters`. */
    readonly limit: number,
    /** The stage that rejected the message at `offset`. */
    readonly stage: ProcessingStage,
    /** What that stage threw. */
    override readonly cause: unknown,
  ) {
    super(
      `the step from offset ${firstOffset} of stream '${stream}' would hold more than ${limit} ` +
        `dead letters: ${stage} failed for the message at offset ${offset} too: ` +
        `${describe(cause)}; nothing of the step was published. So many failures usually mean ` +
        `a bug in the job's decode, event-time or key function: fix it and restart (the step ` +
        `is read again), or raise onError's maxDeadLetters`,
      { cause },
    );
  }
}

/**
 * The broker refused or did not confirm a publish. `retriable` errors (connection lost,
 * confirm timed out) make the runner resume from the broker's last publishing id, which
 * is safe because the broker deduplicates; others stop the job.
 */
export class PublishError extends StreamWindowsError {
  override readonly name = 'PublishError';
  override readonly code: string = 'PUBLISH_FAILED';
  constructor(
    /** The target stream. */
    readonly stream: string,
    /** The publishing id of the refused publish (the step's last source offset). */
    readonly publishingId: bigint,
    /** Whether the runner resumes from the broker's last publishing id (true) or the job stops. */
    readonly retriable: boolean,
    reason: string,
    /** The broker's response code, when the broker answered with one. */
    readonly responseCode?: number,
  ) {
    super(
      `publish of id ${publishingId} to stream '${stream}' failed` +
        (responseCode === undefined ? '' : ` (code ${responseCode})`) +
        `: ${reason}`,
    );
  }
}

/**
 * Why a target refuses a publish after an earlier one failed or its publisher was lost: the
 * `Target` contract (src/ports/ports.ts) says no publish goes out until the resume point has
 * been read again. Both brokers' targets say it the same way.
 */
export function refusedUntilResumed(cause: string): string {
  return (
    `refused without sending: an earlier publish failed or the producer was lost (${cause}); ` +
    'publishing resumes once lastPublishingId() has been asked again'
  );
}

/**
 * The broker refused to tell a producer's last publishing id (the job's resume point), with a
 * response code: `retriable` for a passing condition such as "stream not available" (the
 * runner tries again with backoff), not for a final one such as "stream does not exist"
 * (the job stops). A lost connection or a timeout is a `BrokerUnavailableError` instead.
 */
export class ResumePointError extends StreamWindowsError {
  override readonly name = 'ResumePointError';
  override readonly code = 'RESUME_POINT_UNREADABLE';
  constructor(
    /** The target stream. */
    readonly stream: string,
    /** The producer name whose last publishing id was asked. */
    readonly producer: string,
    /** Whether the condition passes (the runner tries again with backoff) or the job stops. */
    readonly retriable: boolean,
    /** The broker's response code. */
    readonly responseCode: number,
    reason: string,
  ) {
    super(
      `querying the last publishing id of producer '${producer}' on stream '${stream}' ` +
        `failed (code ${responseCode}): ${reason}`,
    );
  }
}

/**
 * What `cause` says, in words for a message or a log line: another library's error may echo a
 * connection string, so its passwords are masked here too.
 */
export function describe(cause: unknown): string {
  return redactSecrets(cause instanceof Error ? cause.message : String(cause));
}

function formatGiven(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value); // JSON says null
  try {
    return jsonText(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * An event-time job cannot restart from its last result: the target holds no readable result
 * of its producer under the broker's last publishing id (`publishingId`), so the windows open
 * at that result cannot be rebuilt. Either the target's retention removed the result, or the
 * producer name was used by another job (a step-window job writes no recovery state). Not
 * retriable, and nothing is published: keep the target's retention longer than a job may be
 * stopped, or start the job under a new producer name (its windows then start empty).
 */
export class RecoveryError extends StreamWindowsError {
  override readonly name = 'RecoveryError';
  override readonly code = 'RECOVERY_STATE_MISSING';
  /** Always false: retrying cannot bring the missing result back. */
  readonly retriable = false;
  constructor(
    /** The target stream. */
    readonly stream: string,
    /** The job's producer name. */
    readonly producer: string,
    /** The broker's last publishing id of the producer: the result that could not be read. */
    readonly publishingId: bigint,
    reason: string,
  ) {
    super(
      `cannot restart producer '${producer}' from its result ${publishingId} on stream ` +
        `'${stream}': ${reason}`,
    );
  }
}

/**
 * "One job definition per producer name", checked: the producer's last result on the target
 * (`publishingId`) was written by another job definition (its `sw-job` property, `found`)
 * than this job's (`expected`): two jobs share the name (a typo, two teams, a copied job), or
 * the job's source or window changed. The job stops before publishing anything; not
 * retriable. Give each job its own producer name, or, to change a step job's window on
 * purpose, start it once with the target option `allowDefinitionChange: true`.
 */
export class JobDefinitionError extends StreamWindowsError {
  override readonly name = 'JobDefinitionError';
  override readonly code = 'JOB_DEFINITION_MISMATCH';
  /** Always false: the names clash until one job is renamed. */
  readonly retriable = false;
  constructor(
    /** The target stream. */
    readonly stream: string,
    /** The producer name both definitions use. */
    readonly producer: string,
    /** The publishing id of the producer's last result. */
    readonly publishingId: bigint,
    /** The definition that wrote that result (its `sw-job` property). */
    readonly found: string,
    /** This job's definition. */
    readonly expected: string,
  ) {
    super(
      `producer '${producer}' on stream '${stream}' belongs to another job definition: its ` +
        `last result (publishing id ${publishingId}) was written by ${found}, this job is ` +
        `${expected}; nothing was published. Give each job its own producer name, or start ` +
        `this one once with allowDefinitionChange: true to go on from that result`,
    );
  }
}

/**
 * `allowDefinitionChange` was given, but going on from the producer's last result
 * (`publishingId`, written by definition `found`) with this one (`expected`) would lose or
 * misplace messages (`reason`): a new source (the publishing ids are offsets of the old
 * stream), or a change from an event-time window (the windows open at that result are
 * rebuilt from the old window's offsets, or not at all). Not retriable; nothing is published.
 * Such a job needs a new producer name.
 */
export class DefinitionChangeRefusedError extends StreamWindowsError {
  override readonly name = 'DefinitionChangeRefusedError';
  override readonly code = 'DEFINITION_CHANGE_REFUSED';
  /** Always false: the change needs a new producer name. */
  readonly retriable = false;
  constructor(
    /** The target stream. */
    readonly stream: string,
    /** The job's producer name. */
    readonly producer: string,
    /** The publishing id of the producer's last result. */
    readonly publishingId: bigint,
    /** The definition that wrote that result. */
    readonly found: string,
    /** This job's definition. */
    readonly expected: string,
    reason: string,
  ) {
    super(
      `producer '${producer}' on stream '${stream}' cannot go on from its last result ` +
        `(publishing id ${publishingId}, written by ${found}) as ${expected}, even with ` +
        `allowDefinitionChange: ${reason}; nothing was published. Give this job a new producer name`,
    );
  }
}

/**
 * A partitioned job's loop found its producer (`producer`, `<job>@<partition stream>`) never
 * published on `stream`, but the name an earlier version derived for the partition
 * (`formerProducer`, `<job>-<partition stream>`) did, up to `formerPublishingId`: started, the
 * loop would read its partition from the first offset and publish every result again. Not
 * retriable; nothing is published. Keep the old name through the target factory, or accept
 * the re-read with the `toPartitions` option `allowRereadAfterRename: true`.
 */
export class ProducerRenamedError extends StreamWindowsError {
  override readonly name = 'ProducerRenamedError';
  override readonly code = 'PRODUCER_RENAMED';
  /** Always false: the choice of name is the operator's. */
  readonly retriable = false;
  constructor(
    /** The partition's target stream. */
    readonly stream: string,
    /** The producer name the loop derives now (`<job>@<partition stream>`). */
    readonly producer: string,
    /** The name an earlier version derived (`<job>-<partition stream>`), which did publish. */
    readonly formerProducer: string,
    /** The former producer's last publishing id. */
    readonly formerPublishingId: bigint,
  ) {
    super(
      `producer '${producer}' never published on stream '${stream}', but '${formerProducer}', ` +
        `the name an earlier version derived for this partition, did (last publishing id ` +
        `${formerPublishingId}): starting would re-read the partition from its first offset and ` +
        `publish its results a second time; nothing was published. Keep the old name (stop ` +
        `every instance, then give the target factory producer '${formerProducer}'), or accept ` +
        `the re-read with the toPartitions option allowRereadAfterRename: true`,
    );
  }
}

/**
 * Reading the source failed. `retriable` errors (connection lost) make the runner resume
 * from the broker's last publishing id; others stop the job.
 */
export class SourceError extends StreamWindowsError {
  override readonly name: string = 'SourceError';
  override readonly code: string = 'SOURCE_FAILED';
  constructor(
    /** The source stream. */
    readonly stream: string,
    /** Whether the runner resumes from the broker's last publishing id (true) or the job stops. */
    readonly retriable: boolean,
    reason: string,
    /** Where reading failed, when known. */
    readonly offset?: bigint,
  ) {
    super(
      `reading stream '${stream}'` +
        (offset === undefined ? '' : ` at offset ${offset}`) +
        ` failed: ${reason}`,
    );
  }
}

/**
 * The broker told this single active consumer to step down (another instance of the job
 * takes over its group or partition). Retriable: the runner lets its confirms land, the
 * source then answers the broker, and the job waits to be activated again.
 */
export class SourceDeactivatedError extends SourceError {
  override readonly name = 'SourceDeactivatedError';
  override readonly code = 'SOURCE_DEACTIVATED';
  constructor(
    stream: string,
    /** The single active consumer group that stepped this reader down. */
    readonly group: string,
    nextOffset: bigint | undefined,
  ) {
    super(
      stream,
      true,
      `the broker deactivated this reader of consumer group '${group}'; another instance takes over`,
      nextOffset,
    );
  }
}

/**
 * Offsets the reader needs were removed by the stream's retention before they were read.
 * Not retriable: those messages are gone. A job stops rather than publish results that
 * silently miss them. Both brokers report it: RabbitMQ's adapter on the first delivery after
 * a subscribe or a single-active activation (src/rabbitmq/read/source-subscription.ts), the
 * embedded broker when a read starts at (or reaches) a removed offset.
 */
export class RetentionGapError extends SourceError {
  override readonly name = 'RetentionGapError';
  override readonly code = 'RETENTION_GAP';
  constructor(
    stream: string,
    from: bigint,
    /** The first offset the stream still stores. */
    readonly firstAvailable: bigint,
  ) {
    super(
      stream,
      false,
      `offsets ${from}..${firstAvailable - 1n} were removed by the stream's retention before ` +
        `they were read (the stream now starts at ${firstAvailable}); nothing was processed`,
      from,
    );
  }
}

/**
 * The broker cannot be reached now (connection lost and not yet re-established, or a request
 * timed out). Always retriable: the runner resumes from the broker's last publishing id.
 */
export class BrokerUnavailableError extends StreamWindowsError {
  override readonly name: string = 'BrokerUnavailableError';
  override readonly code: string = 'BROKER_UNAVAILABLE';
  /** Always true: the runner resumes once the broker answers again. */
  readonly retriable = true;
}

/** Whether the runner may recover from `error` by resuming from the broker's resume point. */
export function isRetriable(error: unknown): boolean {
  return (
    error instanceof BrokerUnavailableError ||
    ((error instanceof PublishError ||
      error instanceof SourceError ||
      error instanceof ResumePointError) &&
      error.retriable)
  );
}

/**
 * The broker refused the connection: wrong user or password, or a virtual host that does
 * not exist or the user may not use. Not retriable: it will refuse again until the settings
 * change. `responseCode` is the broker's response code (8 authentication failure, 12 virtual host
 * access failure, ...).
 */
export class AccessRefusedError extends StreamWindowsError {
  override readonly name = 'AccessRefusedError';
  override readonly code = 'ACCESS_REFUSED';
  /** Always false: the broker refuses again until the settings change. */
  readonly retriable = false;
  constructor(
    /** The broker's `host:port`. */
    readonly where: string,
    /** The broker's response code: 8 authentication failure, 12 virtual host access failure, ... */
    readonly responseCode: number,
    reason: string,
  ) {
    super(`RabbitMQ at ${where} refused the connection: ${reason}`);
  }
}

/**
 * A message of a stream read as results (`readResults`) is not a result of this format, or
 * breaks a `pack: 'batch'` result's run of parts. Not retriable: the bytes stay what they
 * are; read with `invalid: 'skip'` to pass over such messages.
 */
export class NotAResultError extends StreamWindowsError {
  override readonly name = 'NotAResultError';
  override readonly code = 'NOT_A_RESULT';
  constructor(
    /** The stream read as results. */
    readonly stream: string,
    /** The message's offset. */
    readonly offset: bigint,
    /** Why it is not a readable result. */
    override readonly cause: unknown,
  ) {
    super(
      `the message at offset ${offset} of stream '${stream}' is not a readable result: ${describe(cause)}`,
      { cause },
    );
  }
}

/**
 * A worker thread of a `PartitionWorkers` job ended with an error: its job failed
 * (`partition` names the partition stream whose loop failed first, when one did), its module
 * could not be loaded or did not build a job, or the thread died. The other workers are
 * stopped first. Not retriable: start the job again. `cause` is the error as it crossed the
 * thread boundary: an Error with its name, message, code and stack, not of its class.
 */
export class PartitionWorkerError extends StreamWindowsError {
  override readonly name = 'PartitionWorkerError';
  override readonly code = 'PARTITION_WORKER_FAILED';
  constructor(
    /** The failed worker's index, from 0. */
    readonly worker: number,
    /** How many workers the job ran. */
    readonly workers: number,
    /** The partition stream whose loop failed first, when one did. */
    readonly partition: string | undefined,
    /**
     * The error as it crossed the thread boundary: an Error with its name, message, code and stack.
     */
    override readonly cause: unknown,
  ) {
    super(
      `worker ${worker} of ${workers}` +
        (partition === undefined ? '' : ` (partition '${partition}')`) +
        ` failed: ${describe(cause)}`,
      { cause },
    );
  }
}

/** Where a database sink's batch failed: see `SinkError.stage`. */
export type SinkStage = 'prepare' | 'decode' | 'apply' | 'checkpoint' | 'timeout' | 'retries';

/**
 * A database sink could not apply offsets `firstOffset`..`lastOffset` of `stream`: nothing of
 * them was applied (their transaction rolled back), and the checkpoint still holds the offset
 * before them, so a restart reads them again. `stage` tells where: 'decode' (the message at
 * `firstOffset` = `lastOffset` does not decode), 'apply' (the database refused the batch: a
 * constraint violation, a table or column that does not match), 'checkpoint' (the checkpoint
 * table refused), 'prepare' (creating the sink's tables failed, before any batch), 'timeout'
 * (the transaction ran longer than the sink's `transactionTimeoutMs`), 'retries' (a retriable
 * error outlasted the sink's `maxRetries`). Where no batch was read ('prepare', and 'retries'
 * after an error outside a batch), both offsets are where the sink resumes (its checkpoint + 1;
 * 0 when not known). `retriable`: the sink retries it itself (from the checkpoint) and
 * reports it in a `retry` event; a `run()` that throws it has stopped.
 */
export class SinkError extends StreamWindowsError {
  override readonly name = 'SinkError';
  override readonly code = 'SINK_FAILED';
  constructor(
    /** The sink's name. */
    readonly sink: string,
    /** The stream the sink reads. */
    readonly stream: string,
    /**
     * The first offset of the batch not applied (where the sink resumes when no batch was read).
     */
    readonly firstOffset: bigint,
    /** The last offset of the batch not applied. */
    readonly lastOffset: bigint,
    /** Where it failed: 'prepare', 'decode', 'apply', 'checkpoint', 'timeout' or 'retries'. */
    readonly stage: SinkStage,
    /**
     * Whether the sink retries it itself (reporting a `retry` event); a `run()` that throws it has
     * stopped.
     */
    readonly retriable: boolean,
    /** The database's or the decoder's error. */
    override readonly cause: unknown,
  ) {
    super(
      stage === 'prepare'
        ? `sink '${sink}' could not create its tables to read stream '${stream}' (prepare): ` +
            `${describe(cause)}; nothing was applied`
        : `sink '${sink}' could not apply ` +
            (firstOffset === lastOffset
              ? `the message at offset ${firstOffset}`
              : `offsets ${firstOffset}..${lastOffset}`) +
            ` of stream '${stream}' (${stage}): ${describe(cause)}; nothing of them was applied`,
      { cause },
    );
  }
}

/**
 * A table a database sink writes does not have the shape the sink writes in: missing (and not
 * one the sink can create), a column missing or of another type, or no unique key on the
 * columns its upserts conflict on. Found when the sink starts, before any batch: the cause of
 * a `SinkError` at stage 'prepare' (not retried).
 */
export class SinkTableError extends StreamWindowsError {
  override readonly name = 'SinkTableError';
  override readonly code = 'SINK_TABLE_MISMATCH';
  constructor(
    /** The table, as the sink's option names it. */
    readonly table: string,
    /** The column at fault (columns, comma-separated, for a unique key); undefined for the table itself. */
    readonly column: string | undefined,
    /** What the sink needs there (a type, a unique key, the table). */
    readonly expected: string,
    /** What the database has there. */
    readonly found: string,
  ) {
    super(
      `table '${table}'${column === undefined ? '' : ` column '${column}'`}: ` +
        `expected ${expected}, found ${found}`,
    );
  }
}

/**
 * `writeOutbox` could not add its row (`writeOutboxAll`: the first of its list it could not
 * add, at `index`): a younger transaction already committed a row of the same key, and
 * committing this one now would put the key's rows on the stream out of commit order. Nothing
 * of the row was written and PostgreSQL has aborted the transaction: roll it back and run it
 * again, as after a serialization failure (`retriable`). Rare: it takes two transactions
 * writing one key at once, the older one claiming the key last.
 */
export class OutboxOrderError extends StreamWindowsError {
  override readonly name = 'OutboxOrderError';
  override readonly code = 'OUTBOX_KEY_ORDER';
  /** Always true: the same transaction run again gets a younger transaction id and passes. */
  readonly retriable = true;
  constructor(
    /** The outbox table. */
    readonly table: string,
    /** The row's key. */
    readonly key: string,
    /** The database's refusal. */
    override readonly cause: unknown,
    /** The event's index in the list given to `writeOutboxAll`; undefined for `writeOutbox`. */
    readonly index?: number,
  ) {
    super(
      `outbox '${table}': key '${key}'${index === undefined ? '' : ` (events[${index}])`} ` +
        'was committed by a younger transaction while this one was open, so this row would ' +
        'reach the stream out of commit order; nothing was written and the transaction is ' +
        'aborted: roll it back and run it again',
      { cause },
    );
  }
}

/** Where an outbox relay failed: see `RelayError`. */
export type RelayStage = 'prepare' | 'resume' | 'read' | 'publish' | 'retries';

/**
 * An outbox relay could not publish. `stage` tells where: 'prepare' (creating the outbox
 * table), 'resume' (reading where the stream stands, or finding that row in the table),
 * 'read' (reading rows), 'publish' (the broker refused a row, or a row is larger than a
 * write), 'retries' (a retriable error outlasted `maxRetries`). `row` is the outbox row at
 * stake (its id, and its transaction), undefined when none was. `retriable`: the relay retries
 * it itself, from where the stream stands; a `run()` that throws it has stopped. Rows already
 * on the stream stay; none is skipped.
 */
export class RelayError extends StreamWindowsError {
  override readonly name = 'RelayError';
  override readonly code = 'RELAY_FAILED';
  constructor(
    /** The relay's name (its producer's). */
    readonly relay: string,
    /** The outbox table. */
    readonly table: string,
    /** The stream it publishes to. */
    readonly stream: string,
    /** The row at stake: its id and its transaction; undefined when none was. */
    readonly row: { readonly id: bigint; readonly txid: bigint } | undefined,
    /** Where it failed. */
    readonly stage: RelayStage,
    /** Whether the relay retries it itself (reporting a `retry` event). */
    readonly retriable: boolean,
    /** The database's, the broker's or the relay's own cause. */
    override readonly cause: unknown,
  ) {
    super(
      `outbox relay '${relay}' from table '${table}' to stream '${stream}' failed (${stage})` +
        (row === undefined ? '' : ` at row ${row.id} of transaction ${row.txid}`) +
        `: ${describe(cause)}`,
      { cause },
    );
  }
}
