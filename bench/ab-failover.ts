/**
 * Before/after of the failover time (./failover.ts), in the same run: the standbys of the
 * kills are started from this tree and from an older copy in turn, so that the machine's load
 * hits both alike. The older copy needs this tree's instance and probe:
 *   git archive <commit> src tsconfig.json package.json | tar -x -C /tmp/before
 *   mkdir /tmp/before/bench && cp bench/{partition-child,partitions-job,failover-probe}.ts /tmp/before/bench/
 *   ln -s "$PWD/node_modules" /tmp/before/node_modules
 *   RABBITMQ_STREAM_URL=... npx tsx bench/ab-failover.ts /tmp/before [kills per tree]
 * Prints, per tree, the total from the SIGKILL to the standby's first result and its parts
 * (`FAILOVER_PARTS`), ms, median (min–max) of its kills. A kill's instance killed is the
 * previous kill's standby, of the other tree: the kill's parts are all the standby's.
 */
import { brokerUrl } from './e2e.js';
import { describeParts, failoverSamples, partSpreads } from './failover.js';
import { spreadOf } from './measure.js';
import { PARTITION_CHILD } from './partition-child-process.js';

const [beforeDir, killsArg = '10'] = process.argv.slice(2);
const url = brokerUrl();
if (beforeDir === undefined || url === undefined) {
  throw new Error('usage: RABBITMQ_STREAM_URL=... ab-failover.ts <before dir> [kills per tree]');
}
const trees = { before: `${beforeDir}/bench/partition-child.ts`, after: PARTITION_CHILD };
const samples = await failoverSamples(url, 2 * Number(killsArg), {
  trees: Object.values(trees),
});
Object.keys(trees).forEach((tree, i) => {
  const kills = samples[i] ?? [];
  const total = spreadOf(kills.map((sample) => sample.totalMs));
  console.log(
    `${tree}: ${total.median.toFixed(1)} ms (${total.min.toFixed(1)}–${total.max.toFixed(1)}), ` +
      `${kills.length} kills; ${describeParts(partSpreads(kills))}`,
  );
});
