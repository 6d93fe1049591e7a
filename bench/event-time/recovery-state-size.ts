import { decodeMessage, encodeMessage } from '../../src/codecs/amqp-message.js';
import { aggregate } from '../../src/dsl/pipeline.js';
import { ResultProperty } from '../../src/result-format/result-format.js';
import { DEFAULT_FRAME_MAX, maxWriteBytes } from '../../src/ports/write-size.js';
import { MemoryBroker } from '../../src/memory/broker.js';
import { count } from '../../src/windows/count.js';
import { encodeReading, type Reading } from '../corpus.js';
import type { CaseResult } from '../report.js';
import { EPOCH, fillSource } from './corpus.js';
import { EVENT_TIME_KINDS, jobOf, sumOfValues } from './jobs.js';
import { throughputShape } from './throughput.js';

const RECOVERY_PROPERTIES: readonly string[] = [
  ResultProperty.watermark,
  ResultProperty.resumeOffset,
  ResultProperty.resumeWatermark,
  ResultProperty.openCounts,
];

/**
 * The recovery state's bytes in a result. Per-key count windows record every open window's
 * key and first offset (sw-open-counts), so their results grow with the open keys: bytes
 * per open key, and the most open keys whose result still fits one write under RabbitMQ's
 * default frame_max, or `frameMax` (found by running the job, on the embedded broker, which refuses what
 * RabbitMQ refuses; above it the step takes several writes, its open counts written once, in
 * slices). The other kinds' recovery state is a watermark and an offset or two.
 */
export async function recoveryStateSizeCases(
  keyCounts: readonly [number, number] = [1_000, 10_000],
  frameMax = DEFAULT_FRAME_MAX,
): Promise<CaseResult[]> {
  const [few, many] = keyCounts;
  const fewBytes = oneWrite(await countResult(few), few);
  const manyBytes = oneWrite(await countResult(many), many);
  const bytesPerOpenKey = (manyBytes - fewBytes) / (many - few);
  const results: CaseResult[] = [
    {
      name: 'event-time-recovery-state/count-per-key',
      kind: 'event-time',
      msgsPerSec: Number.NaN,
      ratios: {},
      values: {
        [`recoveryBytesAt${few}Keys`]: fewBytes,
        [`recoveryBytesAt${many}Keys`]: manyBytes,
        bytesPerOpenKey,
        maxWriteBytes: maxWriteBytes(frameMax),
        mostOpenKeysInOneResult: await mostOpenKeysThatFit(bytesPerOpenKey, frameMax),
      },
    },
  ];
  for (const kind of EVENT_TIME_KINDS) {
    results.push({
      name: `event-time-recovery-state/${kind}`,
      kind: 'event-time',
      msgsPerSec: Number.NaN,
      ratios: {},
      values: { recoveryBytes: await constantRecoveryBytes(kind) },
    });
  }
  return results;
}

function oneWrite(bytes: number | undefined, keys: number): number {
  if (bytes === undefined) {
    throw new Error(`recovery state bench: ${keys} open keys do not fit one write`);
  }
  return bytes;
}

/**
 * count(2, { perKey: true }) over `keys` keys seen once each (their windows stay open), then
 * a key seen twice, whose window closes: ONE result, recording the `keys` open windows; its
 * recovery bytes when it is one write, undefined when it took several.
 * Keys are named as the other cases' ("sensor-<i>"), offsets start at 0.
 */
async function countResult(keys: number, broker = new MemoryBroker()): Promise<number | undefined> {
  broker.createStream('source');
  broker.createStream('results');
  const messages: Uint8Array[] = [];
  for (let i = 0; i < keys; i++)
    messages.push(encodeReading({ sensor: `sensor-${i}`, value: 1 }, EPOCH));
  for (let i = 0; i < 2; i++) messages.push(encodeReading({ sensor: 'closing', value: 1 }, EPOCH));
  for (let first = 0; first < messages.length; first += 500) {
    broker.append('source', messages.slice(first, first + 500));
  }
  await aggregate<Reading>(broker.source('source'))
    .window(count(2, { perKey: true }))
    .key((reading) => reading.sensor)
    .aggregate(sumOfValues)
    .to(broker.target('results', { producer: 'bench' }))
    .run({ untilCaughtUp: true });
  const writes = broker.chunks('results');
  const [stored, ...more] = broker.messages('results');
  if (stored === undefined || (writes.length === 1 && more.length > 0)) {
    throw new Error('recovery state bench: the count job did not publish one result');
  }
  return writes.length === 1 ? recoveryBytesOf(stored.bytes) : undefined;
}

/**
 * Bisection over the open keys, each probe a job run under `frameMax` (one write or several), between
 * half and twice the estimate from `bytesPerOpenKey` (both ends checked first).
 */
async function mostOpenKeysThatFit(bytesPerOpenKey: number, frameMax: number): Promise<number> {
  const fitsWith = async (keys: number): Promise<boolean> =>
    (await countResult(keys, new MemoryBroker({ frameMax }))) !== undefined;
  const estimate = Math.round(maxWriteBytes(frameMax) / bytesPerOpenKey);
  let fits = Math.floor(estimate / 2);
  let refused = 2 * estimate;
  if (!(await fitsWith(fits)) || (await fitsWith(refused))) {
    throw new Error('recovery state bench: the limit is not within half and twice the estimate');
  }
  while (refused - fits > 1) {
    const keys = Math.floor((fits + refused) / 2);
    if (await fitsWith(keys)) fits = keys;
    else refused = keys;
  }
  return fits;
}

/** Bytes the recovery properties add to the first result of a small run of `kind`. */
async function constantRecoveryBytes(kind: (typeof EVENT_TIME_KINDS)[number]): Promise<number> {
  const broker = new MemoryBroker();
  fillSource(broker, throughputShape(4_000, 10));
  broker.createStream('results');
  await jobOf(kind, broker.source('source'), broker.target('results', { producer: 'bench' })).run({
    untilCaughtUp: true,
  });
  const [first] = broker.messages('results');
  if (first === undefined) throw new Error(`recovery state bench: ${kind} published nothing`);
  return recoveryBytesOf(first.bytes);
}

/** What the result's recovery properties take in its encoding: with them less without. */
function recoveryBytesOf(bytes: Uint8Array): number {
  const message = decodeMessage(bytes);
  const properties = Object.fromEntries(
    Object.entries(message.applicationProperties ?? {}).filter(
      ([name]) => !RECOVERY_PROPERTIES.includes(name),
    ),
  );
  return bytes.length - encodeMessage({ ...message, applicationProperties: properties }).length;
}
