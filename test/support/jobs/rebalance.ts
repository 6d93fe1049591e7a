// One rebalance, driven the same way on either broker, and what the instances must tell of it.
// Instance A of a partitioned job reads both partitions of a two-partition super stream to the
// end; instance B joins, and the partition rule (index rem members) moves partition 1 to B;
// then B stops, and partition 1 comes back to A. The same situation gives the same events on
// the embedded broker and on RabbitMQ.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { lastWriteId, type JobEventMap, type PartitionedRunner } from '../../../src/index.js';

/** The events that tell a job's place in its consumer group, in the order a loop tells them. */
export const GROUP_EVENTS = ['standby', 'started', 'stepDown', 'deactivated', 'stopped'] as const;
type GroupEvent = (typeof GROUP_EVENTS)[number];
export type Told = { [K in GroupEvent]: [K, JobEventMap[K]] }[GroupEvent];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any job: only its events are read
type AnyJob = PartitionedRunner<any, any, any>;

/** The group events each partition loop of `job` tells, by partition index, in order. */
export function recordGroupEvents(job: AnyJob): Map<number, Told[]> {
  const told = new Map<number, Told[]>();
  for (const name of GROUP_EVENTS) {
    job.on(name, (event, partition) => {
      const list = told.get(partition.index) ?? [];
      list.push([name, event] as Told);
      told.set(partition.index, list);
    });
  }
  return told;
}

/** The names of what partition `index` told, in order. */
export function namesOf(told: Map<number, Told[]>, index: number): string[] {
  return (told.get(index) ?? []).map(([name]) => name);
}

/** Resolves once `done` holds, checked every 10 ms; fails after `boundMs`, saying `what`. */
async function until(what: string, done: () => boolean, boundMs: number): Promise<void> {
  const deadline = performance.now() + boundMs;
  while (!done()) {
    if (performance.now() > deadline)
      throw new Error(`gave up after ${boundMs} ms waiting: ${what}`);
    await sleep(10);
  }
}

export interface RebalanceRun {
  readonly a: Map<number, Told[]>;
  readonly b: Map<number, Told[]>;
}

/**
 * Runs the rebalance: `instance()` makes one instance of the job (A, then B), whose loops read
 * partitions holding messages up to offset `lastOffset` each (one result ending at `lastOffset`).
 * Every wait is bounded by `boundMs`.
 */
export async function rebalance(
  instance: () => AnyJob,
  lastOffset: bigint,
  boundMs: number,
): Promise<RebalanceRun> {
  const jobA = instance();
  const jobB = instance();
  const a = recordGroupEvents(jobA);
  const b = recordGroupEvents(jobB);
  const publishedA = new Set<number>();
  jobA.on('published', (event, partition) => {
    if (event.lastOffset === lastOffset) publishedA.add(partition.index);
  });
  const stopA = new AbortController();
  const stopB = new AbortController();
  const runA = jobA.run({ signal: stopA.signal });
  let runB: Promise<unknown> | undefined;
  try {
    await until('A read both partitions to the end', () => publishedA.size === 2, boundMs);
    runB = jobB.run({ signal: stopB.signal });
    await until(
      'partition 1 moved to B, A stands by for it again, B stands by for partition 0',
      () =>
        namesOf(a, 1).filter((name) => name === 'standby').length === 2 &&
        namesOf(b, 1).includes('started') &&
        namesOf(b, 0).includes('standby'),
      boundMs,
    );
    stopB.abort();
    await runB;
    await until(
      'partition 1 came back to A',
      () => namesOf(a, 1).filter((name) => name === 'started').length === 2,
      boundMs,
    );
  } finally {
    stopB.abort();
    stopA.abort();
    await Promise.allSettled([runA, runB]);
  }
  await runA;
  return { a, b };
}

/**
 * What each loop of the rebalance told, in order and with what it carries: both brokers must
 * pass this one check.
 */
export function expectRebalanceEvents(
  { a, b }: RebalanceRun,
  partitions: readonly string[],
  group: string,
  lastOffset: bigint,
): void {
  expect(namesOf(a, 0)).toEqual(['standby', 'started', 'stopped']);
  expect(namesOf(a, 1)).toEqual([
    'standby',
    'started',
    'stepDown',
    'deactivated',
    'standby',
    'started',
    'stopped',
  ]);
  expect(namesOf(b, 0)).toEqual(['standby', 'stopped']);
  expect(namesOf(b, 1)).toEqual(['standby', 'started', 'stopped']);
  for (const [told, index] of [a, b].flatMap((t) => [0, 1].map((i) => [t, i] as const))) {
    for (const [name, event] of told.get(index) ?? []) {
      if (name === 'standby') expect(event).toEqual({ stream: partitions[index], group });
    }
  }
  const next = lastOffset + 1n;
  const toldA = a.get(1) ?? [];
  // Everything read and confirmed when asked: the answer waits for nothing, B goes on after it.
  expect(toldA[2]).toEqual([
    'stepDown',
    { stream: partitions[1], group, nextOffset: next, inFlight: 0 },
  ]);
  expect(toldA[3]).toEqual(['deactivated', { stream: partitions[1], nextOffset: next }]);
  // Both start after the step ending at `lastOffset`, whose last write's id the broker keeps.
  const started = { lastPublishingId: lastWriteId(lastOffset), lastOffset, from: next };
  expect(b.get(1)?.[1]).toMatchObject(['started', started]);
  expect(toldA[5]).toMatchObject(['started', started]);
}
