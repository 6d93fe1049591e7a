// A job's own script using showProgress: catches up on `source` into `target`, then says done.
// Arguments: url source target.
import { aggregate } from '../../src/index.js';
import { showProgress } from '../../src/cli/index.js';
import { connect } from '../../src/rabbitmq/index.js';

const [url, source, target] = process.argv.slice(2) as [string, string, string];
const rabbit = await connect(url);
const job = aggregate<{ n: number }>(rabbit.source(source))
  .count(10)
  .reduce((sum, m) => sum + m.n, 0)
  .to(rabbit.target(target, { producer: 'progress-job' }), { retryDelayMs: 0 });
const stop = showProgress(job);
await job.run({ untilCaughtUp: true });
stop();
await rabbit.close();
process.stdout.write('done\n');
