import { connect } from '../rabbitmq/connection.js';
import { DEFAULT_CHECKPOINT_TABLE } from '../sink/checkpoint-table.js';
import {
  databaseOption,
  openStatusDatabase,
  tableOption,
  type StatusReading,
} from './status-database.js';
import {
  ExitCode,
  requiredOption,
  streamOption,
  type CommandContext,
  type OptionValues,
} from './command.js';
import { toJson } from './json.js';
import { refuseOthersOptions } from './status-options.js';
import { sinkStatus, type SinkStatus } from './sink-status.js';
import { styleFor, type Style } from './style.js';
import { chunkTimesLine, lagTable } from './stream-lag.js';
import { humanDuration } from './table.js';
import { UsageError } from './usage-error.js';

const HEADERS = [
  'SINK',
  'SOURCE',
  'CHECKPOINT',
  'RESUME AT',
  'SOURCE END',
  'LAG',
  'LAG TIME',
] as const;

/** The options of a job's status, which `status --sink` refuses. */
const JOB_OPTIONS = ['target', 'producer', 'job'] as const;

/** What `status --sink` reads from its database, in its messages. */
const SINK_READING: Omit<StatusReading, 'noTable'> = {
  command: 'status --sink',
  reads: "the sink's checkpoints",
  what: 'the checkpoints',
};

/**
 * `status --sink NAME`: where a database sink stands on each stream it reads, from its
 * checkpoint rows in PostgreSQL (--database, else DATABASE_URL) and from the broker. Every
 * option is checked before anything is loaded or connected: a usage error needs neither.
 */
export async function runSinkStatus(
  values: OptionValues,
  { io, urls, json, colour }: CommandContext,
): Promise<number> {
  const sink = requiredOption(values, 'sink', 'status');
  const jobOptions = JOB_OPTIONS.filter((name) => values[name] !== undefined);
  if (jobOptions.length > 0) {
    throw new UsageError(
      "status --sink takes --source or --super-stream, not a job's " +
        jobOptions.map((name) => `--${name}`).join(', '),
      'status',
    );
  }
  refuseOthersOptions(values, ['database', 'checkpoint-table']);
  if ((values['source'] === undefined) === (values['super-stream'] === undefined)) {
    throw new UsageError('status --sink takes one of --source and --super-stream', 'status');
  }
  const superStream =
    values['super-stream'] === undefined
      ? undefined
      : streamOption(values, 'super-stream', 'status', urls);
  const source =
    superStream === undefined ? streamOption(values, 'source', 'status', urls) : undefined;
  const checkpointTable = tableOption(values, 'checkpoint-table', DEFAULT_CHECKPOINT_TABLE);
  const database = databaseOption(values, io.env, SINK_READING);

  const port = await openStatusDatabase(database, {
    ...SINK_READING,
    noTable:
      `checkpoint table '${checkpointTable}': no sink has run on it, or the sink names ` +
      'another (--checkpoint-table)',
  });
  let statuses: SinkStatus[];
  try {
    const rabbit = await connect(urls);
    try {
      const streams =
        superStream === undefined ? [source as string] : await rabbit.partitions(superStream);
      statuses = await sinkStatus(
        port,
        sink,
        streams.map((stream) => rabbit.source(stream)),
        checkpointTable,
      );
    } finally {
      await rabbit.close();
    }
  } finally {
    await port.close();
  }

  if (json) {
    io.stdout.write(`${toJson(superStream === undefined ? statuses[0] : statuses)}\n`);
    return ExitCode.ok;
  }
  const where = superStream === undefined ? (source as string) : `any partition of ${superStream}`;
  const lines = sinkStatusLines(
    statuses,
    { where, checkpointTable, database: database.label },
    styleFor(colour),
  );
  io.stdout.write(`${lines.join('\n')}\n`);
  return ExitCode.ok;
}

/**
 * The table of `status --sink`, one row per stream, and the lines under it: a sink with no
 * checkpoint on any of them (`where` names them), each lagging stream's chunk times, and
 * where the checkpoints were read.
 */
export function sinkStatusLines(
  statuses: readonly SinkStatus[],
  read: { readonly where: string; readonly checkpointTable: string; readonly database: string },
  style: Style,
): string[] {
  const rows = statuses.map((status) => [
    status.sink,
    status.source,
    status.resumeFrom === 'first' ? 'none' : String(status.checkpoint),
    String(status.resumeFrom),
    String(status.sourceEnd),
    String(status.lagMessages),
    humanDuration(status.lagMs),
  ]);
  const lines = lagTable(HEADERS, rows, statuses, style);
  if (statuses.every((status) => status.resumeFrom === 'first')) {
    lines.push(
      style.yellow(
        `sink '${statuses[0]?.sink ?? ''}' has no checkpoint on ${read.where} in ` +
          `${read.checkpointTable}: it has applied nothing there and would start at the first ` +
          'offset (a new sink, or a misspelt sink or stream name?)',
      ),
    );
  }
  for (const status of statuses) {
    const line = chunkTimesLine(status.source, status);
    if (line !== undefined) lines.push(style.dim(line));
  }
  lines.push(style.dim(`checkpoints: table ${read.checkpointTable} of ${read.database}`));
  return lines;
}
