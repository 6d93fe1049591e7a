import { connect } from '../rabbitmq/connection.js';
import { requiredOption, ExitCode, type Command } from './command.js';
import { toJson } from './json.js';
import { jobStatus, type JobStatus } from './status.js';
import { styleFor } from './style.js';
import { humanDuration, isoTime, table } from './table.js';

const HEADERS = [
  'SOURCE',
  'TARGET',
  'PRODUCER',
  'LAST ID',
  'RESUME AT',
  'SOURCE END',
  'LAG',
  'LAG TIME',
] as const;

export const statusCommand: Command = {
  name: 'status',
  summary: 'Where a job stands: resume point, source end, lag in messages and time',
  help: `Usage: stream-windows status --source S --target T --producer P [--json] [--url URL]

Where the job publishing to T as producer P stands on its source S: the producer's last
publishing id, where the job resumes (last + 1; 'first' for a last id of 0), the source's
end offset, the lag in messages (what is left to read) and in time (broker timestamp of the
chunk holding the resume point against the source's last chunk).

Options:
  --source S    Source stream of the job
  --target T    Target stream of the job
  --producer P  The job's producer name on T

Output: a table, or with --json one JSON object (offsets as strings, times in epoch ms):
  {"source","target","producer","lastPublishingId","resumeFrom","sourceEnd",
   "lagMessages","lagMs","resumeChunkTime","lastChunkTime"}`,
  options: {
    source: { type: 'string' },
    target: { type: 'string' },
    producer: { type: 'string' },
  },
  async run(values, { io, url, json, colour }) {
    const source = requiredOption(values, 'source', 'status');
    const target = requiredOption(values, 'target', 'status');
    const producer = requiredOption(values, 'producer', 'status');
    const rabbit = await connect(url);
    let status: JobStatus;
    try {
      status = await jobStatus(rabbit.source(source), rabbit.target(target, { producer }));
    } finally {
      await rabbit.close();
    }
    if (json) {
      io.stdout.write(`${toJson(status)}\n`);
      return ExitCode.ok;
    }
    const style = styleFor(colour);
    const lag = status.lagMessages === 0n ? style.green : style.yellow;
    // One row per stream pair: a super stream's partitions will be more rows.
    const rows = [
      [
        status.source,
        status.target,
        status.producer,
        String(status.lastPublishingId),
        String(status.resumeFrom),
        String(status.sourceEnd),
        String(status.lagMessages),
        humanDuration(status.lagMs),
      ],
    ];
    // A row is green when the job is caught up, yellow while it lags (coloured after the
    // padding, which must count visible characters only).
    const [header, ...body] = table(HEADERS, rows, style);
    const lines = [header, ...body.map(lag)];
    if (status.resumeChunkTime !== undefined && status.lastChunkTime !== undefined) {
      lines.push(
        style.dim(
          `resume point's chunk written ${isoTime(status.resumeChunkTime)}, ` +
            `last chunk ${isoTime(status.lastChunkTime)}`,
        ),
      );
    }
    io.stdout.write(`${lines.join('\n')}\n`);
    return ExitCode.ok;
  },
};
