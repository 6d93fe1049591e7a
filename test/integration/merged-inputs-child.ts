// The job over several inputs of the SIGKILL test (merged-inputs-sigkill.test.ts), as a child
// process: from the resume point its target's last result gives until it has caught up with
// the inputs' ends at its start, then exit 0. It prints 'p' each time it hands a result to the
// broker, so that the parent can kill it in the middle of publishing.
import type { Target } from '../../src/index.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { mergedReadingsJob } from '../support/jobs/merged-readings.js';

const [url, targetStream, producer, ...inputs] = process.argv.slice(2);
if (
  url === undefined ||
  targetStream === undefined ||
  producer === undefined ||
  inputs.length < 2
) {
  throw new Error('usage: merged-inputs-child.ts URL TARGET PRODUCER INPUT INPUT...');
}
const rabbit = await connect(url);
const target = rabbit.target(targetStream, { producer });
const reporting: Target = {
  ...forwarding(target),
  publish: (id, messages) => {
    process.stdout.write('p');
    return target.publish(id, messages);
  },
};
await mergedReadingsJob(
  inputs.map((input) => rabbit.source(input)),
  reporting,
).run({ untilCaughtUp: true });
await rabbit.close();
