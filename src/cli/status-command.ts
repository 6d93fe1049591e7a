import { skipCommand } from '../engine/skip-request.js';
import { partitionProducer } from '../partitioning/partitioned-runner.js';
import { connect, type RabbitMQ } from '../rabbitmq/connection.js';
import { nodeName } from '../rabbitmq/cluster/stream-members.js';
import {
  requiredOption,
  streamOption,
  ExitCode,
  type Command,
  type OptionValues,
} from './command.js';
import { UsageError } from './usage-error.js';
import { runRelayStatus } from './relay-status-command.js';
import { runSinkStatus } from './sink-status-command.js';
import { refuseOthersOptions } from './status-options.js';
import { toJson } from './json.js';
import { jobStatus, type JobStatus } from './status.js';
import { styleFor } from './style.js';
import { chunkTimesLine, lagTable } from './stream-lag.js';
import { humanDuration } from './table.js';

const HEADERS = [
  'SOURCE',
  'TARGET',
  'PRODUCER',
  'LAST OFFSET',
  'RESUME AT',
  'SOURCE END',
  'LAG',
  'LAG TIME',
] as const;

export const statusCommand: Command = {
  name: 'status',
  summary: 'Where a job, a database sink or an outbox relay stands: resume point, lag',
  help: `Usage: stream-windows status --source S --target T --producer P [--json] [--url URL]
       stream-windows status --super-stream S --target T --job J [--json] [--url URL]
       stream-windows status --sink NAME (--source S | --super-stream S) [--database URL]
                             [--checkpoint-table T] [--json] [--url URL]
       stream-windows status --relay NAME (--stream S | --super-stream S) [--table T]
                             [--database URL] [--json] [--url URL]

Where the job publishing to T as producer P stands on its source S: the producer's last
step's last source offset ('none' when P never published on T: a new job, or a misspelt
name), where the job resumes (last + 1; 'first' when P never published), the source's
end offset, the lag in messages (what is left to read) and in time (broker timestamp of the
chunk holding the resume point against the source's last chunk). A job that stopped on a
message since its last result (onError('stop')) is named with that offset, and whether a
skip is requested for it (see 'stream-windows help skip'). For a partitioned job over
super stream S, one row per partition, each under the job's producer name for it
(<job>@<partition stream>).

Options:
  --source S        Source stream of the job
  --target T        Target stream of the job
  --producer P      The job's producer name on T
  --super-stream S  Source super stream of a partitioned job (instead of --source); with
                    --relay, the super stream the relay publishes to (instead of --stream)
  --job J           The partitioned job's name (instead of --producer)
  --sink NAME       A database sink's name: its status instead of a job's (below)
  --database URL    With --sink or --relay: PostgreSQL URL of the sink's or the relay's
                    database (default $DATABASE_URL)
  --checkpoint-table T
                    With --sink: the sink's checkpointTable (default stream_windows_checkpoints)
  --relay NAME      An outbox relay's name: its status instead of a job's (below)
  --stream S        With --relay: the stream the relay publishes to
  --table T         With --relay: the relay's outbox table (default stream_windows_outbox)

Below the table, each stream's leader and replicas (nodes as host:port, as they advertise
themselves): on a cluster, where writes go and where reads may come from. Which instance of a
partitioned job is active on a partition is not shown: RabbitMQ 4.0's stream protocol has no
query for it (the job's standby and stepDown events tell it; see the README's Scaling out).

Output: a table, or with --json one JSON object (offsets as strings, times in epoch ms):
  {"source","target","producer","lastPublishingId","lastOffset","published","resumeFrom","sourceEnd",
   "lagMessages","lagMs","resumeChunkTime","lastChunkTime","stoppedAt","skipRequested",
   "sourceMembers":{"leader","replicas"},"targetMembers":{"leader","replicas"}}
or, for a super stream, a JSON array of them in partition order.

With --sink NAME, where the database sink NAME stands on its source S (or on each partition of
super stream S): its checkpoint, the last offset it applied, read from its checkpoint table in
PostgreSQL ('none' when it applied nothing there: a new sink, or a misspelt name), where it
resumes (checkpoint + 1, or 'first'), the source's end offset and the lag in messages and in
time, measured as for a job. Needs the 'pg' package (an optional peer dependency). With
--json: {"sink","source","checkpoint" (-1: nothing applied),"resumeFrom","sourceEnd",
"lagMessages","lagMs","resumeChunkTime","lastChunkTime"}, an array for a super stream.

With --relay NAME, where the outbox relay NAME stands on stream S: its producer's last
publishing id on S ('none' when it published nothing there: a new relay, or a misspelt
name), the outbox row that id names (its transaction id and row id: the last row on S), the
committed rows of the outbox table after it (not on S yet: BEHIND) and the event-time age of
the oldest of them (OLDEST). On super stream S, THROUGH instead of LAST ID: the publishing id
of the row up to which every partition holds every row, where the relay resumes, and under
it each partition's last publishing id and the THROUGH its last message records. Read from
the broker, then from the database (the 'pg' package too); nothing is created, declared or
changed. With --json: {"relay","table","stream","lastPublishingId" (a super stream's: the
highest partition's),"position" ({"txid","index","rowId"}, null when nothing was published),
"rows","oldestAgeMs" (null when no row is behind)}, on a super stream with "partitions"
([{"stream","lastPublishingId","through" (null: its last message was removed)}]).`,
  options: {
    source: { type: 'string' },
    target: { type: 'string' },
    producer: { type: 'string' },
    'super-stream': { type: 'string' },
    job: { type: 'string' },
    sink: { type: 'string' },
    database: { type: 'string' },
    'checkpoint-table': { type: 'string' },
    relay: { type: 'string' },
    stream: { type: 'string' },
    table: { type: 'string' },
  },
  async run(values, context) {
    if (values['sink'] !== undefined && values['relay'] !== undefined) {
      throw new UsageError('status takes one of --sink and --relay', 'status');
    }
    if (values['sink'] !== undefined) return runSinkStatus(values, context);
    if (values['relay'] !== undefined) return runRelayStatus(values, context);
    const { io, urls, json, colour } = context;
    // Every option is checked before connecting: a usage error needs no broker.
    refuseOthersOptions(values, []);
    const target = streamOption(values, 'target', 'status', urls);
    const superStream = values['super-stream'];
    if (superStream !== undefined && (values['source'] ?? values['producer']) !== undefined) {
      throw new UsageError(
        'status takes --super-stream and --job instead of --source and --producer',
        'status',
      );
    }
    const ask =
      superStream === undefined ? streamStatus(values, urls) : partitionStatuses(values, urls);
    const rabbit = await connect(urls);
    let statuses: JobStatus[];
    let members: Map<string, Members>;
    try {
      statuses = await ask(rabbit, target);
      members = await membersOf(rabbit, [...statuses.map((status) => status.source), target]);
    } finally {
      await rabbit.close();
    }
    if (json) {
      const located = statuses.map((status) => ({
        ...status,
        sourceMembers: members.get(status.source),
        targetMembers: members.get(status.target),
      }));
      const shown = superStream === undefined ? located[0] : located;
      io.stdout.write(`${toJson(shown)}\n`);
      return ExitCode.ok;
    }
    const style = styleFor(colour);
    const rows = statuses.map((status) => [
      status.source,
      status.target,
      status.producer,
      status.published ? String(status.lastOffset) : 'none',
      String(status.resumeFrom),
      String(status.sourceEnd),
      String(status.lagMessages),
      humanDuration(status.lagMs),
    ]);
    const lines = lagTable(HEADERS, rows, statuses, style);
    for (const status of statuses) {
      if (status.published) continue;
      lines.push(
        style.yellow(
          `${status.producer} has never published on ${status.target}: the job would start at ` +
            `${status.source}'s first offset (a new job, or a misspelt producer name?)`,
        ),
      );
    }
    for (const status of statuses) {
      const { stoppedAt, skipRequested } = status;
      if (stoppedAt === undefined) continue;
      const next =
        skipRequested === stoppedAt
          ? 'a skip is requested: the next start dead-letters it'
          : `after a look at it, '${skipCommand(status.source, status.target, status.producer, stoppedAt)}' steps over it`;
      lines.push(
        style.red(
          `${status.producer} stopped at offset ${stoppedAt} of ${status.source}, a message it ` +
            `could not process (the job's error says why); ${next}`,
        ),
      );
    }
    for (const status of statuses) {
      const line = chunkTimesLine(status.source, status);
      if (line !== undefined) lines.push(style.dim(line));
    }
    for (const [stream, { leader, replicas }] of members) {
      lines.push(
        style.dim(
          `${stream}: leader ${leader}, replicas ${replicas.length === 0 ? 'none' : replicas.join(', ')}`,
        ),
      );
    }
    io.stdout.write(`${lines.join('\n')}\n`);
    return ExitCode.ok;
  },
};

/** Where a stream's members are, as "host:port" of each node. */
interface Members {
  readonly leader: string;
  readonly replicas: readonly string[];
}

/** The members of each stream (once each), in the order given. */
async function membersOf(
  rabbit: RabbitMQ,
  streams: readonly string[],
): Promise<Map<string, Members>> {
  const found = new Map<string, Members>();
  for (const stream of new Set(streams)) {
    const { leader, replicas } = await rabbit.members(stream);
    found.set(stream, { leader: nodeName(leader), replicas: replicas.map(nodeName) });
  }
  return found;
}

/** The status of one stream pair; options checked now, asked once connected. */
function streamStatus(
  values: OptionValues,
  urls: readonly string[],
): (rabbit: RabbitMQ, target: string) => Promise<JobStatus[]> {
  const source = streamOption(values, 'source', 'status', urls);
  const producer = requiredOption(values, 'producer', 'status');
  return async (rabbit, target) => [
    await jobStatus(rabbit.source(source), rabbit.target(target, { producer })),
  ];
}

/** One status per partition, in partition order, each under the job's producer name for it. */
function partitionStatuses(
  values: OptionValues,
  urls: readonly string[],
): (rabbit: RabbitMQ, target: string) => Promise<JobStatus[]> {
  const superStream = streamOption(values, 'super-stream', 'status', urls);
  const job = requiredOption(values, 'job', 'status');
  return async (rabbit, target) => {
    const partitions = await rabbit.partitions(superStream);
    // One at a time: each opens its own connections.
    const statuses: JobStatus[] = [];
    for (const partition of partitions) {
      const producer = partitionProducer(job, partition);
      statuses.push(await jobStatus(rabbit.source(partition), rabbit.target(target, { producer })));
    }
    return statuses;
  };
}
