// A stage of the two-stage SIGKILL test (two-stage-sigkill.test.ts), as a child process: from
// its resume points until it has caught up with its inputs' ends at its start, then exit 0.
//   stage1 URL PARTITION×4 RESULTS×4: stage 1 of each partition at once, one job each
//   stage2 URL TOTALS GROUP RESULTS×4: stage 2 over the result streams; GROUP '-' for none,
//     else the first input is read in that single active consumer group
// It prints a mark each time it hands a result to the broker (stage 1 its partition's number,
// stage 2 'p'), so that the parent can kill it in the middle of publishing; stage 2 also 's' when it stands by in its group and 'a' once it
// has started (activated, its resume point read).
import type { Target } from '../../src/index.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import {
  PARTITIONS,
  SECTIONS,
  STAGE_TWO_PRODUCER,
  stageOne,
  stageOneProducer,
  stageTwo,
} from '../support/jobs/two-stage-readings.js';

const [stage, url, ...rest] = process.argv.slice(2);
const usage =
  'usage: two-stage-child.ts stage1 URL PARTITION×4 RESULTS×4 | stage2 URL TOTALS GROUP RESULTS×4';
if (url === undefined) throw new Error(usage);
const rabbit = await connect(url);

/** `target`, printing `mark` at each publish. */
const reporting = (target: Target, mark = 'p'): Target => ({
  ...forwarding(target),
  publish: (id, messages) => {
    process.stdout.write(mark);
    return target.publish(id, messages);
  },
});

if (stage === 'stage1' && rest.length === 2 * PARTITIONS) {
  const partitions = rest.slice(0, PARTITIONS);
  const results = rest.slice(PARTITIONS);
  await Promise.all(
    partitions.map((partition, p) =>
      stageOne(
        rabbit.source(partition),
        reporting(
          rabbit.target(results[p] as string, { producer: stageOneProducer(p) }),
          String(p),
        ),
        SECTIONS,
      ).run({ untilCaughtUp: true }),
    ),
  );
} else if (stage === 'stage2' && rest.length === 2 + PARTITIONS) {
  const [totals, group, ...results] = rest as [string, string, ...string[]];
  const sources = results.map((stream, i) =>
    i === 0 && group !== '-'
      ? rabbit.source(stream, { singleActive: { name: group } })
      : rabbit.source(stream),
  );
  const job = stageTwo(sources, reporting(rabbit.target(totals, { producer: STAGE_TWO_PRODUCER })));
  job.on('standby', () => process.stdout.write('s'));
  job.on('started', () => process.stdout.write('a'));
  await job.run({ untilCaughtUp: true });
} else {
  throw new Error(usage);
}
await rabbit.close();
