import { aggregate } from '../../src/dsl/pipeline.js';
import type { Target } from '../../src/ports/ports.js';
import { decodeResult, decodeResultHeader } from '../../src/result-format/result-decoder.js';
import { lastWriteId } from '../../src/result-format/publishing-id.js';
import { MemoryBroker } from '../../src/memory/broker.js';
import { tumbling } from '../../src/windows/tumbling.js';
import { forwarding } from '../../test/support/doubles/forwarding-target.js';
import { CHUNK_MESSAGES, type Reading } from '../corpus.js';
import { crashBeforeSecondResult } from '../crash.js';
import { interleavedRounds, median, ratioSpread } from '../measure.js';
import { ratioRange, type CaseResult } from '../report.js';
import { fillSource, type OpenKeysShape } from './corpus.js';
import { sumOfValues } from './jobs.js';
import { LARGE_FRAME_MAX } from './throughput.js';

export const RECOVERY_OPEN_KEYS = [1_000, 100_000] as const;

/**
 * Back-to-back minutes, each key twice a minute (once per half), tumbling 1m with a grace of
 * 30s: window w closes in the middle of window w + 1, whose keys have all arrived by then, so
 * every result leaves `keys` windows open and records the start of window w + 1 as the
 * re-read point. Four minutes: results for windows 0, 1 and 2.
 */
function recoveryShape(keys: number): OpenKeysShape {
  const half = CHUNK_MESSAGES * Math.ceil(keys / CHUNK_MESSAGES);
  return {
    messages: 8 * half,
    keys,
    windowMessages: 2 * half,
    timeline: 'continuous',
    disorderMs: 0,
  };
}

const recoveryJob = (broker: MemoryBroker, target: Target) =>
  aggregate<Reading>(broker.source('source'))
    .window(tumbling('1m', { grace: '30s' }))
    .key((reading) => reading.sensor)
    .aggregate(sumOfValues)
    .to(target);

/** Milliseconds since the run started at which things happened (NaN: not yet). */
interface Timeline {
  readResultMs: number;
  firstReadMs: number;
  /** The first chunk read after the stored result's id: the re-read is over. */
  reReadDoneMs: number;
  /** The chunk holding the re-read point, read by the uninterrupted run. */
  resumePointReadMs: number;
  firstResultMs: number;
  caughtUpMs: number;
}

/**
 * A job stopped with `keys` windows open (a crash before publishing its second result), then
 * restarted: from run() to the first new result and to caught up, split into reading the
 * stored result and re-reading the source from its re-read point up to its id. Against the
 * same job run uninterrupted over the same source: the time it spends on that same span.
 * Rounds rotate restart and uninterrupted run, as the other benches' rounds do.
 */
export async function eventTimeRecoveryCases(
  repeats: number,
  keyCounts: readonly number[] = RECOVERY_OPEN_KEYS,
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const keys of keyCounts) {
    const broker = new MemoryBroker({ frameMax: LARGE_FRAME_MAX });
    fillSource(broker, recoveryShape(keys));
    let runs = 0;
    const timelines: Record<'restart' | 'uninterrupted', Timeline[]> = {
      restart: [],
      uninterrupted: [],
    };
    let span = { from: 0n, through: 0n };
    const decodeMs: number[] = [];
    const restart = async (): Promise<number> => {
      const stream = `results-${runs++}`;
      span = await crashAfterFirstResult(broker, stream, keys);
      // What the runner does with the stored result: decodes its header (the properties) alone,
      // for the recovery state; the sections stay undecoded.
      const bytes = (await broker
        .target(stream, { producer: 'bench' })
        .readResult(lastWriteId(span.through))) as Uint8Array;
      const decoding = performance.now();
      decodeResultHeader(bytes);
      decodeMs.push(performance.now() - decoding);
      const timeline = await timedRun(broker, stream, span.through);
      const stored = broker.messages(stream).map((message) => decodeResult(message.bytes));
      if (stored.length !== 3 || stored[1]?.outputs.length !== keys) {
        throw new Error(
          `event-time recovery bench: the restart did not publish the ${keys} windows left open`,
        );
      }
      timelines.restart.push(timeline);
      broker.deleteStream(stream);
      return timeline.caughtUpMs;
    };
    const uninterrupted = async (): Promise<number> => {
      const stream = `results-${runs++}`;
      broker.createStream(stream);
      const timeline = await timedRun(broker, stream, span.through, span.from);
      timelines.uninterrupted.push(timeline);
      broker.deleteStream(stream);
      return timeline.caughtUpMs;
    };
    // The restart first: the span the uninterrupted run is timed over comes from its crash.
    await interleavedRounds({ restart, uninterrupted }, repeats);
    const restarts = timelines.restart.slice(1);
    const firstRuns = timelines.uninterrupted.slice(1);
    const reReads = restarts.map((t) => t.reReadDoneMs - t.firstReadMs);
    const sameSpans = firstRuns.map((t) => t.reReadDoneMs - t.resumePointReadMs);
    const caughtUps = restarts.map((t) => t.caughtUpMs);
    const uninterruptedCaughtUps = firstRuns.map((t) => t.caughtUpMs);
    const uninterruptedSpan = ratioSpread(reReads, sameSpans);
    const uninterruptedCaughtUp = ratioSpread(caughtUps, uninterruptedCaughtUps);
    results.push({
      name: `event-time-restart/${keys}-open-windows`,
      kind: 'event-time',
      msgsPerSec: Number.NaN,
      // The uninterrupted run's time over the restart's, as a throughput ratio: above 1, the
      // restart is the faster on that span (re-read) or to caught up.
      ratios: {
        uninterruptedSpan: uninterruptedSpan.median,
        uninterruptedCaughtUp: uninterruptedCaughtUp.median,
      },
      values: {
        ...ratioRange('uninterruptedSpan', uninterruptedSpan),
        ...ratioRange('uninterruptedCaughtUp', uninterruptedCaughtUp),
        reReadMessages: Number(span.through - span.from + 1n),
        msToFirstResult: median(restarts.map((t) => t.firstResultMs)),
        msToFirstResultMin: Math.min(...restarts.map((t) => t.firstResultMs)),
        msToFirstResultMax: Math.max(...restarts.map((t) => t.firstResultMs)),
        msToCaughtUp: median(caughtUps),
        readResultMs: median(restarts.map((t) => t.readResultMs)),
        decodeHeaderMs: median(decodeMs.slice(1)),
        msToFirstRead: median(restarts.map((t) => t.firstReadMs)),
        reReadMs: median(reReads),
        uninterruptedSpanMs: median(sameSpans),
        uninterruptedCaughtUpMs: median(uninterruptedCaughtUps),
      },
    });
  }
  return results;
}

/** Run 1: publishes window 0's result, crashes before window 1's; returns the re-read span. */
async function crashAfterFirstResult(
  broker: MemoryBroker,
  stream: string,
  keys: number,
): Promise<{ from: bigint; through: bigint }> {
  broker.createStream(stream);
  const crashed = await crashBeforeSecondResult(broker, stream, (target) =>
    recoveryJob(broker, target),
  );
  const stored = broker.messages(stream).map((message) => decodeResult(message.bytes));
  const recovery = stored[0]?.recovery;
  if (
    !crashed ||
    stored.length !== 1 ||
    recovery === undefined ||
    stored[0]?.outputs.length !== keys
  ) {
    throw new Error('event-time recovery bench: run 1 did not crash after its first result');
  }
  return { from: recovery.offset, through: stored[0].lastOffset };
}

/**
 * Runs the job to caught up on `stream`, timing its steps. `resumePoint` is where the
 * uninterrupted run's same span begins; a restart begins there by itself.
 */
async function timedRun(
  broker: MemoryBroker,
  stream: string,
  through: bigint,
  resumePoint?: bigint,
): Promise<Timeline> {
  const timeline: Timeline = {
    readResultMs: Number.NaN,
    firstReadMs: Number.NaN,
    reReadDoneMs: Number.NaN,
    resumePointReadMs: Number.NaN,
    firstResultMs: Number.NaN,
    caughtUpMs: Number.NaN,
  };
  const target = broker.target(stream, { producer: 'bench' });
  let started = 0;
  const since = (): number => performance.now() - started;
  const timed: Target = {
    ...forwarding(target),
    readResult: async (publishingId) => {
      const asked = performance.now();
      const bytes = await target.readResult(publishingId);
      timeline.readResultMs = performance.now() - asked;
      return bytes;
    },
    publish: async (publishingId, messages) => {
      await target.publish(publishingId, messages);
      if (Number.isNaN(timeline.firstResultMs)) timeline.firstResultMs = since();
    },
  };
  const job = recoveryJob(broker, timed);
  job.on('read', ({ firstOffset, messages }) => {
    if (Number.isNaN(timeline.firstReadMs)) timeline.firstReadMs = since();
    const last = firstOffset + BigInt(messages) - 1n;
    if (resumePoint !== undefined && firstOffset <= resumePoint && resumePoint <= last) {
      timeline.resumePointReadMs = since();
    }
    if (Number.isNaN(timeline.reReadDoneMs) && firstOffset > through)
      timeline.reReadDoneMs = since();
  });
  started = performance.now();
  await job.run({ untilCaughtUp: true });
  timeline.caughtUpMs = since();
  return timeline;
}
