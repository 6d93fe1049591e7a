// The aggregator process of the SIGKILL crash test: one job from the resume point until it
// has caught up with the source, then exit 0. The parent kills it at random moments.
import { aggregate, type Target } from '../../src/index.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';

export interface CrashEvent {
  readonly sensor: number;
  readonly value: number;
}

const [url, source, targetStream] = process.argv.slice(2);
if (url === undefined || source === undefined || targetStream === undefined) {
  throw new Error('usage: crash-child.ts URL SOURCE TARGET');
}
const rabbit = await connect(url);
const target = rabbit.target(targetStream, { producer: 'crash-test' });
// Tells the parent each time a result is handed to the broker, so that it can kill this
// process in the middle of publishing rather than during start-up.
const reporting: Target = {
  ...forwarding(target),
  publish: (id, messages) => {
    process.stdout.write('p');
    return target.publish(id, messages);
  },
};
await aggregate<CrashEvent>(rabbit.source(source))
  .tumbling('1s')
  .key((e) => e.sensor)
  .aggregate({
    init: () => ({ n: 0, sum: 0 }),
    add: (acc, e) => ({ n: acc.n + 1, sum: acc.sum + e.value }),
    result: (acc) => acc,
  })
  .to(reporting)
  .run({ untilCaughtUp: true });
await rabbit.close();
