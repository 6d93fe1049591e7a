import { DEFAULT_OUTBOX_TABLE } from '../outbox/outbox-table.js';
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
import { humanDuration } from './table.js';
import { UsageError } from './usage-error.js';

const HEADERS = ['RELAY', 'STREAM', 'LAST ID', 'TXID', 'ROW ID', 'BEHIND', 'OLDEST'] as const;

/** The options of a job's status, which `status --relay` refuses. */
const JOB_OPTIONS = ['source', 'target', 'producer', 'super-stream', 'job'] as const;

/** What `status --relay` reads from its database, in its messages. */
const RELAY_READING: Omit<StatusReading, 'noTable'> = {
  command: 'status --relay',
  reads: "the relay's outbox table",
  what: "the relay's position",
};

/**
 * `status --relay NAME --stream S`: where an outbox relay stands on S, from its producer's last
 * publishing id on the broker and its outbox table in PostgreSQL (--database, else
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
      "status --relay takes --stream, not a job's " +
        jobOptions.map((name) => `--${name}`).join(', '),
      'status',
    );
  }
  refuseOthersOptions(values, ['database', 'stream', 'table']);
  const stream = streamOption(values, 'stream', 'status', urls);
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
      status = await relayStatus(port, rabbit, relay, { stream }, table);
    } finally {
      await rabbit.close();
    }
  } finally {
    await port.close();
  }

  if (json) {
    const shown = {
      ...status,
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
 * The table of `status --relay`, and the lines under it: a relay that has published nothing on
 * its stream, and where the outbox was read (`database`, without its password).
 */
export function relayStatusLines(status: RelayStatus, database: string, style: Style): string[] {
  const { position } = status;
  const row = [
    status.relay,
    status.stream,
    position === undefined ? 'none' : String(status.lastPublishingId),
    position === undefined ? '-' : String(position.txid),
    position === undefined ? '-' : String(position.rowId),
    String(status.rows),
    status.oldestAgeMs === undefined ? '-' : humanDuration(status.oldestAgeMs),
  ];
  const lines = lagTable(HEADERS, [row], [{ lagMessages: status.rows }], style);
  if (position === undefined) {
    lines.push(
      style.yellow(
        `relay '${status.relay}' has published nothing on ${status.stream}: it would start at ` +
          `the first row of ${status.table} (a new relay, or a misspelt relay or stream name?)`,
      ),
    );
  }
  lines.push(style.dim(`outbox: table ${status.table} of ${database}`));
  return lines;
}
