import { connect } from '../rabbitmq/connection.js';
import { requiredOption, streamOption, ExitCode, type Command } from './command.js';
import { toJson } from './json.js';
import { requestSkip } from './skip.js';
import { UsageError } from './usage-error.js';

export const skipCommand: Command = {
  name: 'skip',
  summary: "Let a job stopped by a message step over it: a dead letter 'skipped by operator'",
  help: `Usage: stream-windows skip --source S --target T --producer P --offset N [--json] [--url URL]

Asks the job publishing to T as producer P, stopped under onError('stop') by the message at
offset N of its source S, to step over that message on its next start: it puts the message
in its next result's dead letters, with the error 'skipped by operator (stream-windows
skip): <cause>', and goes on. Nothing is published here and no producer id is touched: the
request is an offset stored on S (RabbitMQ's offset tracking), read by the job when it
starts, so the step the job had open before N is neither lost nor split.

Refused (exit 1) unless N is the message the job last stopped at since its last result
('stream-windows status' shows it): an offset past the source's end or removed by
retention, one at or below P's last publishing id (the job is past it), or any other
offset. A failure that depends on more than the message (an aggregate of an event-time
job, a reducer failing on a later value of a fromResults message, a result(), encode or
route failure, a setup mistake) is no stop a skip steps over: fix the job instead. Nor is
any stop of a job writing to a super stream.

Options:
  --source S    Source stream of the job
  --target T    Target stream of the job
  --producer P  The job's producer name on T
  --offset N    The offset of the message that stopped the job

Output: one line, or with --json one JSON object (offsets as strings):
  {"source","target","producer","offset","lastPublishingId"}`,
  options: {
    source: { type: 'string' },
    target: { type: 'string' },
    producer: { type: 'string' },
    offset: { type: 'string' },
  },
  async run(values, { io, urls, json }) {
    // Every option is checked before connecting: a usage error needs no broker.
    const source = streamOption(values, 'source', 'skip', urls);
    const target = streamOption(values, 'target', 'skip', urls);
    const producer = requiredOption(values, 'producer', 'skip');
    const given = requiredOption(values, 'offset', 'skip');
    if (!/^\d+$/.test(given)) {
      throw new UsageError(
        `--offset must be an offset (an integer >= 0), given: '${given}'`,
        'skip',
      );
    }
    const rabbit = await connect(urls);
    try {
      const request = await requestSkip(
        rabbit.source(source),
        rabbit.target(target, { producer }),
        BigInt(given),
      );
      io.stdout.write(
        json
          ? `${toJson(request)}\n`
          : `${producer} will dead-letter offset ${request.offset} of ${source} as skipped by ` +
              `operator on its next start\n`,
      );
    } finally {
      await rabbit.close();
    }
    return ExitCode.ok;
  },
};
