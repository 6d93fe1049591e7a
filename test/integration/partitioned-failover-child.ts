// One instance of the partitioned job of the failover test (partitioned-failover.test.ts): the
// super stream read in single active consumer group JOB, every partition's results on one
// target stream under its own producer name. It connects, says `ready`, and joins the groups
// only when the parent writes a line on stdin (a warm spare: the parent starts the next
// replacement ahead, so that a kill is followed by a join at once); it runs until SIGTERM, or
// until the parent kills it. It tells the parent on stdout, one line each:
//   `active <partition>`     activated: the resume point was read (the job's `started`)
//   `handed <partition>`     a result handed to the broker (publish called)
//   `confirmed <partition>`  a result confirmed
//   `inactive <partition>`   stepped down (the job's `deactivated`)
//   `restart <partition> <error>`  resuming after a retriable error (the job's `restart`)
import { createInterface } from 'node:readline';
import type { Target } from '../../src/index.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { JOB, readingsJob } from '../support/jobs/readings-job.js';

const [url, superStream, targetStream] = process.argv.slice(2);
if (url === undefined || superStream === undefined || targetStream === undefined) {
  throw new Error('usage: partitioned-failover-child.ts URL SUPER_STREAM TARGET');
}
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const rabbit = await connect(url);
say('ready');
const lines = createInterface({ input: process.stdin });
await new Promise<void>((resolve) => lines.once('line', () => resolve()));

const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
const source = rabbit.superStreamSource(superStream, { singleActive: { name: JOB } });
const job = readingsJob(source, (partition): Target => {
  const target = rabbit.target(targetStream, { producer: partition.producer });
  return {
    ...forwarding(target),
    publish: (id, messages) => {
      say(`handed ${partition.index}`);
      return target.publish(id, messages);
    },
  };
});
job.on('started', (_, partition) => say(`active ${partition.index}`));
job.on('published', (_, partition) => say(`confirmed ${partition.index}`));
job.on('deactivated', (_, partition) => say(`inactive ${partition.index}`));
job.on('restart', ({ error }, partition) => say(`restart ${partition.index} ${String(error)}`));
await job.run({ signal: stop.signal });
await rabbit.close();
lines.close();
