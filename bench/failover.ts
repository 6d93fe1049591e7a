import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type RabbitMQ } from '../src/rabbitmq/index.js';
import { parseProbeLine, type ProbeLine, type ProbeMoment } from './failover-probe.js';
import { median, spreadOf, type Spread } from './measure.js';
import { PARTITION_CHILD, startChild, type Child } from './partition-child-process.js';
import { fill } from './partitions.js';
import type { CaseResult } from './report.js';

/**
 * Messages appended before each kill: 100 results' worth, so that the instance killed at its
 * first result of the block leaves the standby most of it.
 */
const FAILOVER_BLOCK = 100_000;

/**
 * The parts of a failover, in the order they come, each from the moment the one before it
 * ended (./failover-probe.ts names the moments): the SIGKILL until the standby is asked its
 * resume point (the broker notices the dead connection, activates the standby with a
 * ConsumerUpdate, and the standby's event loop takes it); the producer's last publishing id;
 * its last result (the definition check; the source's `timestampAt` inside it, if asked);
 * the rest of the resume point; the activation answered until the first chunk is handed to
 * the job; the re-read of the open window until its result is published; the publish until
 * its confirm; the confirm until the bench hears of it on the child's stdout.
 */
export const FAILOVER_PARTS = [
  'activation',
  'lastPublishingId',
  'lastResult',
  'resumeRest',
  'firstChunk',
  'reRead',
  'confirm',
  'report',
] as const;

export type FailoverPart = (typeof FAILOVER_PARTS)[number];

/**
 * A part of a failover: wall ms, and the standby's main thread's ms on a CPU and in the run
 * queue over it (./failover-probe.ts; 0 where the part is not the standby's). The rest of
 * the wall time the standby waited for the broker (or, in `activation`, for the broker to
 * tell it anything).
 */
export interface Span {
  readonly ms: number;
  readonly cpuMs: number;
  readonly queuedMs: number;
}

/** One kill: the total and its parts. */
export interface FailoverSample {
  readonly totalMs: number;
  readonly parts: Readonly<Record<FailoverPart, Span>>;
  /** The source's `timestampAt` inside the last result's read; 0 when not asked. */
  readonly timestampAt: Span;
}

/** How `failoverSamples` kills. */
export interface KillOptions {
  /**
   * The instance scripts (./partition-child.ts of this tree, or of another tree for a
   * before/after run, see ./ab-failover.ts); the standby of kill k is started from
   * `trees[k % trees.length]`, so the trees' kills interleave. Default: this tree's.
   */
  readonly trees?: readonly string[];
  /**
   * SIGKILL (default): the process ends and its host closes its connections, which the broker
   * sees at once. SIGSTOP: the process freezes with its connections open, as a host that went
   * silent, which the broker notices only by missed heartbeats (./failover-frozen.ts); it is
   * killed once the standby published.
   */
  readonly signal?: 'SIGKILL' | 'SIGSTOP';
}

/**
 * The failover time on the real broker: an active instance (a child process, single active
 * consumer on a 1-partition super stream) is killed at its first result of a fresh
 * 100,000-message block; the time from the kill to the first result the standby publishes,
 * with its parts (`FAILOVER_PARTS`). After one warm-up kill (SIGKILL), `kills` kills. The
 * samples, per tree.
 */
export async function failoverSamples(
  url: string,
  kills: number,
  options: KillOptions = {},
): Promise<FailoverSample[][]> {
  const rabbit = await connect(url);
  const superStream = `bench-failover-${process.pid}`;
  const target = `bench-failover-results-${process.pid}`;
  try {
    const [partition] = await rabbit.createSuperStream(superStream, { partitions: 1 });
    await rabbit.createStream(target);
    return await killRounds(
      rabbit,
      url,
      { partition: partition as string, superStream, target },
      kills,
      options,
    );
  } finally {
    await rabbit.deleteStream(target).catch(() => undefined);
    await rabbit.deleteSuperStream(superStream).catch(() => undefined);
    await rabbit.close();
  }
}

/** The `failover` case: `failoverSamples` of this tree, the total's spread and each part's median. */
export async function failoverCases(url: string, kills: number): Promise<CaseResult[]> {
  const [samples = []] = await failoverSamples(url, kills);
  const total = spreadOf(samples.map((sample) => sample.totalMs));
  const parts = partSpreads(samples);
  return [
    {
      name: 'failover/sigkill-to-first-result-of-the-standby',
      kind: 'failover',
      msgsPerSec: Number.NaN,
      ratios: {},
      values: {
        msMedian: total.median,
        msMin: total.min,
        msMax: total.max,
        kills: samples.length,
        ...Object.fromEntries(
          Object.entries(parts).flatMap(([part, spread]) => [
            [`${part}Ms`, spread.median],
            [`${part}CpuMs`, spread.cpuMedian],
            [`${part}QueuedMs`, spread.queuedMedian],
          ]),
        ),
      },
      notes: [
        `failover parts, wall ms median (min–max) of ${samples.length} kills, and the ` +
          `standby's main thread's CPU and run-queue ms medians: ${describeParts(parts)}`,
      ],
    },
  ];
}

/** A part's wall time over some kills, and the medians of the standby's CPU and queued time. */
export interface PartSpread extends Spread {
  readonly cpuMedian: number;
  readonly queuedMedian: number;
}

/** Each part's spread over `samples`, and the source's `timestampAt`'s. */
export function partSpreads(
  samples: readonly FailoverSample[],
): Record<FailoverPart | 'timestampAt', PartSpread> {
  const spreadOfSpans = (spans: readonly Span[]): PartSpread => ({
    ...spreadOf(spans.map((span) => span.ms)),
    cpuMedian: median(spans.map((span) => span.cpuMs)),
    queuedMedian: median(spans.map((span) => span.queuedMs)),
  });
  const parts = Object.fromEntries(
    FAILOVER_PARTS.map((part) => [
      part,
      spreadOfSpans(samples.map((sample) => sample.parts[part])),
    ]),
  ) as Record<FailoverPart, PartSpread>;
  return { ...parts, timestampAt: spreadOfSpans(samples.map((sample) => sample.timestampAt)) };
}

/** `partSpreads` as one line: wall ms median (min–max), the standby's CPU and queued ms medians. */
export function describeParts(parts: Readonly<Record<string, PartSpread>>): string {
  const ms = (value: number): string => value.toFixed(1);
  return Object.entries(parts)
    .map(
      ([part, { median, min, max, cpuMedian, queuedMedian }]) =>
        `${part} ${ms(median)} (${ms(min)}–${ms(max)}; cpu ${ms(cpuMedian)}, queued ${ms(queuedMedian)})`,
    )
    .join(', ');
}

interface Streams {
  readonly partition: string;
  readonly superStream: string;
  readonly target: string;
}

/** Bound on the wait for the standby's first result: a frozen instance takes missed heartbeats. */
const LATE_MS = { SIGKILL: 30_000, SIGSTOP: 600_000 } as const;

async function killRounds(
  rabbit: RabbitMQ,
  url: string,
  streams: Streams,
  kills: number,
  { trees = [PARTITION_CHILD], signal = 'SIGKILL' }: KillOptions,
): Promise<FailoverSample[][]> {
  const start = (tree: string): Child =>
    startChild(url, streams.superStream, streams.target, ['--single-active', '--probe'], tree);
  let active = start(trees[0] as string);
  await active.ready;
  active.go();
  let fed = 0;
  const samples: FailoverSample[][] = trees.map(() => []);
  for (let kill = 0; kill <= kills; kill++) {
    const tree = kill % trees.length;
    const standby = start(trees[tree] as string);
    const moments = new Map<ProbeMoment, ProbeLine>();
    standby.onLine((line) => {
      const probe = parseProbeLine(line);
      if (probe !== undefined) moments.set(probe.moment, probe);
    });
    await standby.ready;
    standby.go();
    await sleep(1_500); // joined the group (not timed)
    const working = active.nextConfirm();
    await fill(rabbit, streams.partition, fed, fed + FAILOVER_BLOCK);
    fed += FAILOVER_BLOCK;
    await working;
    const firstOfStandby = standby.nextConfirm();
    const killedAt = performance.timeOrigin + performance.now();
    const how = kill > 0 ? signal : 'SIGKILL';
    active.kill(how);
    const waiting = new AbortController();
    const late = sleep(LATE_MS[how], undefined, { signal: waiting.signal }).then(() => {
      throw new Error(
        `failover bench: the standby published nothing within ${LATE_MS[how]} ms of the ${how}`,
      );
    });
    await Promise.race([firstOfStandby, late]).finally(() => {
      waiting.abort();
      late.catch(() => undefined); // aborted
    });
    const heardAt = performance.timeOrigin + performance.now();
    if (how === 'SIGSTOP') active.kill();
    // The first kill warms up.
    if (kill > 0) samples[tree]?.push(sampleOf(killedAt, heardAt, moments));
    await active.exited;
    active = standby;
  }
  active.stop();
  await active.exited;
  return samples;
}

/** A kill's parts from the standby's moments, the kill's and the bench's hearing of it (epoch ms). */
function sampleOf(
  killedAt: number,
  heardAt: number,
  moments: ReadonlyMap<ProbeMoment, ProbeLine>,
): FailoverSample {
  const at = (moment: ProbeMoment): ProbeLine => {
    const line = moments.get(moment);
    if (line === undefined) throw new Error(`failover bench: the standby told no '${moment}'`);
    return line;
  };
  const span = (from: ProbeLine, to: ProbeLine): Span => ({
    ms: to.at - from.at,
    cpuMs: to.cpu - from.cpu,
    queuedMs: to.queued - from.queued,
  });
  const sum = (a: Span, b: Span): Span => ({
    ms: a.ms + b.ms,
    cpuMs: a.cpuMs + b.cpuMs,
    queuedMs: a.queuedMs + b.queuedMs,
  });
  const asked = at('lastPublishingId');
  const answered = at('lastPublishingIdAnswered');
  // Read only when the job needs it (rule 4 of src/engine/resume/resume-point.ts).
  const resultAsked = moments.get('readResult') ?? answered;
  const resultRead = moments.get('readResultAnswered') ?? answered;
  const timestampAsked = moments.get('timestampAt');
  const timestampAnswered = moments.get('timestampAtAnswered');
  const between = span(answered, resultAsked);
  const rest = span(resultRead, at('started'));
  const confirmed = at('firstConfirm');
  return {
    totalMs: heardAt - killedAt,
    parts: {
      // From the kill; the standby, idle since it joined its group, ran only when activated.
      activation: { ...span(at('standby'), asked), ms: asked.at - killedAt },
      lastPublishingId: span(asked, answered),
      lastResult: span(resultAsked, resultRead),
      resumeRest: sum(between, rest),
      firstChunk: span(at('started'), at('firstRead')),
      reRead: span(at('firstRead'), at('firstPublish')),
      confirm: span(at('firstPublish'), confirmed),
      report: { ms: heardAt - confirmed.at, cpuMs: 0, queuedMs: 0 },
    },
    timestampAt:
      timestampAsked === undefined || timestampAnswered === undefined
        ? { ms: 0, cpuMs: 0, queuedMs: 0 }
        : span(timestampAsked, timestampAnswered),
  };
}
