/**
 * The job of the `large-steps` restart case (bench/large-steps.ts), killed in the middle of
 * its step:
 *   large-steps-child.ts URL SOURCE TARGET KILL_AFTER
 * It runs the bench's job over SOURCE into TARGET (producer PRODUCER) and kills itself with
 * SIGKILL when the broker confirms its KILL_AFTER-th write. The writes after it are held back
 * (never sent): the job pipelines a step's writes (up to 32 in flight), so without that the
 * step's last write would often be sent, and stored, before the kill; this way the target
 * holds exactly KILL_AFTER writes of the step.
 */
import type { Target } from '../src/index.js';
import { connect } from '../src/rabbitmq/index.js';
import { forwarding } from '../test/support/doubles/forwarding-target.js';
import { hourlyTotals, PRODUCER } from './large-steps.js';

const [url, source, targetStream, killAfterText] = process.argv.slice(2);
const killAfter = Number(killAfterText);
if (url === undefined || source === undefined || targetStream === undefined || !(killAfter > 0)) {
  throw new Error('usage: large-steps-child.ts URL SOURCE TARGET KILL_AFTER');
}
const rabbit = await connect(url);
const target = rabbit.target(targetStream, { producer: PRODUCER });
let sent = 0;
let confirmed = 0;
const killing: Target = {
  ...forwarding(target),
  publish: (id, messages) => {
    if (++sent > killAfter) return new Promise<void>(() => undefined); // the kill comes first
    return target.publish(id, messages).then(() => {
      if (++confirmed >= killAfter) process.kill(process.pid, 'SIGKILL');
    });
  },
};
await hourlyTotals(rabbit.source(source), killing).run({ untilCaughtUp: true });
// Not killed: the parent reports it (the step took fewer writes than KILL_AFTER).
await rabbit.close();
