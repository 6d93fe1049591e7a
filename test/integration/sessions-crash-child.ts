// The aggregator process of the SIGKILL session test: the per-key sessions job from its
// resume point (recovered from its last result) until it has caught up with the source, then
// exit 0. It prints 's' when it has recovered and starts reading, and 'p' each time it hands
// a result to the broker, so that the parent can kill it during recovery or while publishing.
import { connect } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { SESSIONS_PRODUCER, sessionsJob } from '../support/jobs/sessions-job.js';

const [url, source, targetStream] = process.argv.slice(2);
if (url === undefined || source === undefined || targetStream === undefined) {
  throw new Error('usage: sessions-crash-child.ts URL SOURCE TARGET');
}
const rabbit = await connect(url);
const target = rabbit.target(targetStream, { producer: SESSIONS_PRODUCER });
const runner = sessionsJob(rabbit.source(source), {
  ...forwarding(target),
  publish: (id, messages) => {
    process.stdout.write('p');
    return target.publish(id, messages);
  },
});
runner.on('started', () => process.stdout.write('s'));
await runner.run({ untilCaughtUp: true });
await rabbit.close();
