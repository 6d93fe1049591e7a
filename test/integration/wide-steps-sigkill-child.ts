// The aggregator process of the multi-write SIGKILL test: the wide-steps job (steps of 100,000
// outputs, several writes each) from its resume point until it has caught up with the source.
//
// Given KILL_AT, it sends itself SIGKILL as soon as the broker has confirmed its KILL_AT-th
// write (stored, or discarded as one it already has), while the step's next write is on its
// way or about to be. The parent picks KILL_AT at random; the process kills itself so that the
// moment is the one picked: a kill sent by the parent lands several writes later on a busy
// machine, and a step's last write then slips in first more often than not. Should the job
// catch up before that write, it prints 'd' and waits for the parent's SIGKILL. Its target
// confirms one write before it sends the next (maxInFlight 1): with the default, a step's
// writes all leave the process at once and the broker stores them whether the process lives
// or not, so no kill would leave a step not whole.
import { connect } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { WIDE_STEPS_PRODUCER, wideStepsJob } from '../support/jobs/wide-steps.js';

const [url, source, targetStream, killAt] = process.argv.slice(2);
if (url === undefined || source === undefined || targetStream === undefined) {
  throw new Error('usage: wide-steps-sigkill-child.ts URL SOURCE TARGET [KILL_AT]');
}
const rabbit = await connect(url);
const target = rabbit.target(targetStream, { producer: WIDE_STEPS_PRODUCER, maxInFlight: 1 });
let confirmed = 0;
await wideStepsJob(rabbit.source(source), {
  ...forwarding(target),
  publish: async (id, messages) => {
    await target.publish(id, messages);
    if (++confirmed === Number(killAt)) process.kill(process.pid, 'SIGKILL');
  },
}).run({ untilCaughtUp: true });
if (killAt !== undefined) {
  process.stdout.write('d');
  setInterval(() => undefined, 60_000);
} else {
  await rabbit.close();
}
