/**
 * The failover time when the active instance freezes instead of ending (SIGSTOP: its
 * connections stay open, as a host that went silent or a network that dropped it), which the
 * broker notices only by missed heartbeats (`stream.heartbeat` in rabbitmq.conf, 60 s by
 * default):
 *   RABBITMQ_STREAM_URL=... npx tsx bench/failover-frozen.ts [kills]
 * Prints the total from the SIGSTOP to the standby's first result and its parts (./failover.ts),
 * ms, median (min–max). A minute or two per kill at the broker's default.
 */
import { brokerUrl } from './e2e.js';
import { describeParts, failoverSamples, partSpreads } from './failover.js';
import { spreadOf } from './measure.js';

const [killsArg = '2'] = process.argv.slice(2);
const url = brokerUrl();
if (url === undefined) throw new Error('usage: RABBITMQ_STREAM_URL=... failover-frozen.ts [kills]');
const [kills = []] = await failoverSamples(url, Number(killsArg), { signal: 'SIGSTOP' });
const total = spreadOf(kills.map((sample) => sample.totalMs));
console.log(
  `SIGSTOP: ${total.median.toFixed(1)} ms (${total.min.toFixed(1)}–${total.max.toFixed(1)}), ` +
    `${kills.length} kills; ${describeParts(partSpreads(kills))}`,
);
