import { DEFAULT_OUTBOX_TABLE } from '../outbox/outbox-table.js';
import { relayPublishingId } from '../outbox/relay-publishing-id.js';
import { connect } from '../rabbitmq/connection.js';
import {
  ExitCode,
  requiredOption,
  streamOption,
  type CommandContext,
  type OptionValues,
} from './command.js';
import { toJson } from './json.js';
import { refuseOthersOptions } from './status-options.js';
import { relayStatus, type RelayStatus } from './relay-status.js';
import {
  databaseOption,
  openStatusDatabase,
  tableOption,
  type StatusReading,
} from './status-database.js';
import { styleFor, type Style } from './style.js';
import { lagTable } from './stream-lag.js';
import { humanDuration, table } from './table.js';
import { UsageError } from './usage-error.js';

const HEADERS = ['RELAY', 'STREAM', 'LAST ID', 'TXID', 'ROW ID', 'BEHIND', 'OLDEST'] as const;

/**
 * On a super stream the relay's row shows where it resumes (THROUGH: every partition holds
 * every row up to it), and a table under it each partition's last publishing id and the
 * `sw-relay-through` of its last message.
 */
const SUPER_STREAM_HEADERS = [
  'RELAY',
  'SUPER STREAM',
  'THROUGH',
  'TXID',
  'ROW ID',
  'BEHIND',
  'OLDEST',
] as const;
const PARTITION_HEADERS = ['PARTITION', 'LAST ID', 'THROUGH'] as const;

/** The options of a job's status, which `status --relay` refuses. */
const JOB_OPTIONS = ['source', 'target', 'producer', 'job'] as const;

/** What `status --relay` reads from its database, in its messages. */
const RELAY_READING: Omit<StatusReading, 'noTable'> = {
  command: 'status --relay',
  reads: "the relay's outbox table",
  what: "the relay's position",
};

/**
 * `status --relay NAME (--stream S | --super-stream S)`: where an outbox relay stands on S,
 * from its producer's last publishing id on the broker (on a super stream, each partition's
 * and what its last message records) and its outbox table in PostgreSQL (--database, else
 * DATABASE_URL). Every option is checked before anything is loaded or connected.
 */
export async function runRelayStatus(
  values: OptionValues,
  { io, urls, json, colour }: CommandContext,
): Promise<number> {
  const relay = requiredOption(values, 'relay', 'status');
  const jobOptions = JOB_OPTIONS.filter((name) => values[name] !== undefined);
  if (jobOptions.length > 0) {
    throw new UsageError(
      "status --relay takes --stream or --super-stream, not a job's " +
        jobOptions.map((name) => `--${name}`).join(', '),
      'status',
    );
  }
  refuseOthersOptions(values, ['database', 'stream', 'table']);
  if ((values['stream'] === undefined) === (values['super-stream'] === undefined)) {
    throw new UsageError('status --relay takes one of --stream and --super-stream', 'status');
  }
  const to =
    values['stream'] === undefined
      ? { superStream: streamOption(values, 'super-stream', 'status', urls) }
      : { stream: streamOption(values, 'stream', 'status', urls) };
  const table = tableOption(values, 'table', DEFAULT_OUTBOX_TABLE);
  const database = databaseOption(values, io.env, RELAY_READING);

  const port = await openStatusDatabase(database, {
    ...RELAY_READING,
    noTable:
      `outbox table '${table}': no relay or writer has created it, or the relay names ` +
      'another (--table)',
  });
  let status: RelayStatus;
  try {
    const rabbit = await connect(urls);
    try {
      status = await relayStatus(port, rabbit, relay, to, table);
    } finally {
      await rabbit.close();
    }
  } finally {
    await port.close();
  }

  if (json) {
    const shown = {
      ...status,
      ...(status.partitions === undefined
        ? {}
        : {
            partitions: status.partitions.map((partition) => ({
              ...partition,
              through: partition.through ?? null,
            })),
          }),
      position: status.position ?? null,
      oldestAgeMs: status.oldestAgeMs ?? null,
    };
    io.stdout.write(`${toJson(shown)}\n`);
    return ExitCode.ok;
  }
  const lines = relayStatusLines(status, database.label, styleFor(colour));
  io.stdout.write(`${lines.join('\n')}\n`);
  return ExitCode.ok;
}

/**
 * The table of `status --relay`, and the lines under it: on a super stream, each partition's
 * standing (and those whose last message retention removed); a relay that has published
 * nothing; where the outbox was read (`database`, without its password).
 */
export function relayStatusLines(status: RelayStatus, database: string, style: Style): string[] {
  const { position, partitions } = status;
  const row = [
    status.relay,
    status.stream,
    // On a stream, the last publishing id itself; on a super stream, the resume point.
    position === undefined ? 'none' : String(relayPublishingId(position)),
    position === undefined ? '-' : String(position.txid),
    position === undefined ? '-' : String(position.rowId),
    String(status.rows),
    status.oldestAgeMs === undefined ? '-' : humanDuration(status.oldestAgeMs),
  ];
  const headers = partitions === undefined ? HEADERS : SUPER_STREAM_HEADERS;
  const lines = lagTable(headers, [row], [{ lagMessages: status.rows }], style);
  if (partitions !== undefined) {
    const rows = partitions.map(({ stream, lastPublishingId, through }) => [
      stream,
      lastPublishingId === 0n ? 'none' : String(lastPublishingId),
      lastPublishingId === 0n ? '-' : (through?.toString() ?? 'removed'),
    ]);
    lines.push(...table(PARTITION_HEADERS, rows, style));
    for (const { stream, lastPublishingId, through } of partitions) {
      if (lastPublishingId === 0n || through !== undefined) continue;
      lines.push(
        style.yellow(
          `the relay's last message on ${stream} (publishing id ${lastPublishingId}) is not on ` +
            'it any more (retention?): the other partitions tell where the relay resumes',
        ),
      );
    }
  }
  if (status.lastPublishingId === 0n) {
    const on = partitions === undefined ? status.stream : `super stream ${status.stream}`;
    lines.push(
      style.yellow(
        `relay '${status.relay}' has published nothing on ${on}: it would start at the first ` +
          `row of ${status.table} (a new relay, or a misspelt relay or stream name?)`,
      ),
    );
  }
  lines.push(style.dim(`outbox: table ${status.table} of ${database}`));
  return lines;
}
