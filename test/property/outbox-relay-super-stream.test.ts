// The outbox relay to a super stream under random transactions, crashes on random partitions
// and concurrent relays, on PGlite and the embedded broker: once a relay ran to the end, each
// partition holds exactly the committed rows whose key routes to it, each once, in relay order,
// each key's rows in commit order. A crash is a fault on one partition's producer (before or
// after a publish is stored, after its confirm, a lost confirm, a refusal) while the other
// partitions take the batch's later rows, or the run's signal aborted at a random batch; a
// crashed relay is closed and a new one of the same name started. Some steps run two relays of
// one name at once, their batches cut apart (different sizes); prunes run between steps and
// while relays run.
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import type { FaultPoint } from '../../src/memory/errors.js';
import { pglite } from '../../src/pglite/index.js';
import { OutboxRelay } from '../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import type { RelayBroker } from '../../src/outbox/relay-destination.js';
import type { RelayEventMap } from '../../src/outbox/relay-events.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { pgliteForTests } from '../support/jobs/sink-fixture.js';
import {
  expectExactlyOnPartitions,
  keysRoutedTo,
  seenOutboxMessage,
  type CommittedRow,
  writeOnPglite,
} from '../support/jobs/outbox-fixture.js';

const PARAMETERS = propertyParameters(120);
const PARTITIONS = 3;
/** Two keys per partition. */
const KEYS = Array.from({ length: PARTITIONS }, (_, p) => keysRoutedTo(p, PARTITIONS, 2)).flat();

const db = pgliteForTests();

type Crash =
  | { readonly kind: 'none' }
  | {
      readonly kind: 'fault';
      readonly partition: number;
      readonly point: FaultPoint;
      readonly atPublish: number;
    }
  | { readonly kind: 'abort'; readonly atBatch: number };

type Step =
  | { readonly kind: 'tx'; readonly keys: readonly string[]; readonly rollback: boolean }
  | {
      readonly kind: 'relay';
      readonly crash: Crash;
      /** The second relay's batch size, when two run at once. */
      readonly two: number | undefined;
      readonly maxBatchRows: number;
      /** A prune made while the relays run, after this many batches (as on a timer). */
      readonly pruneAt: number | undefined;
    }
  | { readonly kind: 'prune' };

const crashArb: fc.Arbitrary<Crash> = fc.oneof(
  { weight: 1, arbitrary: fc.constant<Crash>({ kind: 'none' }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      partition: fc.integer({ min: 0, max: PARTITIONS - 1 }),
      point: fc.constantFrom<FaultPoint>(
        'before-publish',
        'after-publish',
        'after-confirm',
        'lose-confirm',
        'refuse-publish',
      ),
      atPublish: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('abort' as const),
      atBatch: fc.integer({ min: 1, max: 3 }),
    }),
  },
);

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('tx' as const),
      keys: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 16 }),
      rollback: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('relay' as const),
      crash: crashArb,
      two: fc.oneof(
        { weight: 2, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 12 }) },
      ),
      maxBatchRows: fc.integer({ min: 1, max: 12 }),
      pruneAt: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('prune' as const) }) },
);

const scenarioArb = fc.array(stepArb, { minLength: 4, maxLength: 16 });

let runs = 0;

describe('outbox relay to a super stream (property)', () => {
  it(
    'each partition holds exactly the committed rows routed to it, once each, in order, whatever crashes on which partitions, concurrent relays and prunes',
    async () => {
      const coverage = new Coverage('outbox relay to a super stream');
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (steps) => {
          coverage.run();
          runs++;
          const table = `outbox_sp${runs}`;
          const superStream = `orders-p${runs}`;
          const broker = new MemoryBroker();
          const streams = broker.createSuperStream(superStream, { partitions: PARTITIONS });
          await createOutboxTable(pglite(db), table);
          const second: RelayBroker = {
            target: (s, o) => broker.target(s, { ...o, connection: 'relay-2' }),
            partitions: (name) => broker.partitions(name),
          };
          const starts: RelayEventMap['started'][] = [];
          const relayOn = (on: RelayBroker, maxBatchRows: number): OutboxRelay => {
            const relay = new OutboxRelay({
              name: 'relay',
              database: pglite(db),
              table,
              broker: on,
              toSuperStream: superStream,
              maxBatchRows,
              pollIntervalMs: 1,
              retryDelayMs: 1,
              warnAfterRetries: Infinity,
            });
            relay.on('started', (event) => starts.push(event));
            return relay;
          };
          const prune = async (): Promise<number> => {
            const relay = relayOn(broker, 1);
            try {
              return await relay.prune();
            } finally {
              await relay.close();
            }
          };
          const seen = (): ReturnType<typeof seenOutboxMessage>[][] =>
            streams.map((stream) =>
              broker.messages(stream).map((message) => seenOutboxMessage(message.bytes)),
            );
          const committed: CommittedRow[] = [];
          let n = 0;
          for (const step of steps) {
            if (step.kind === 'tx') {
              const rows = await writeOnPglite(
                db,
                table,
                step.keys.map((key) => ({ key, json: `${key}-${n++}` })),
                step.rollback,
              );
              if (step.rollback) {
                coverage.count('rolled back');
                continue;
              }
              committed.push(...rows);
            } else if (step.kind === 'prune') {
              coverage.count('pruned rows', (await prune()) > 0);
            } else {
              const { crash } = step;
              const controller = new AbortController();
              const fault =
                crash.kind === 'fault'
                  ? broker.injectFault({
                      stream: streams[crash.partition] as string,
                      producer: 'relay',
                      atPublish: crash.atPublish,
                      point: crash.point,
                      // A lost confirm or a refusal is retried by the run itself; a crash kills the process.
                      onFire: () => {
                        if (crash.point !== 'lose-confirm' && crash.point !== 'refuse-publish') {
                          controller.abort();
                        }
                      },
                    })
                  : undefined;
              const relays = [relayOn(broker, step.maxBatchRows)];
              if (step.two !== undefined) relays.push(relayOn(second, step.two));
              let batches = 0;
              let pruned: Promise<number> | undefined;
              for (const relay of relays) {
                relay.on('published', () => {
                  batches++;
                  if (crash.kind === 'abort' && batches === crash.atBatch) controller.abort();
                  if (batches === step.pruneAt) pruned = prune();
                });
              }
              // A run ends caught up, aborted, or on the crash (a permanent error).
              await Promise.all(
                relays.map((relay) =>
                  relay
                    .run({ untilCaughtUp: true, signal: controller.signal })
                    .catch(() => undefined),
                ),
              );
              coverage.count('pruned while running', ((await pruned) ?? 0) > 0);
              coverage.count('fault fired', fault?.fired === true);
              coverage.count('aborted', crash.kind === 'abort' && controller.signal.aborted);
              coverage.count('two relays', step.two !== undefined);
              coverage.count(
                'two relays with a crash',
                step.two !== undefined && controller.signal.aborted,
              );
              // The trap: a partition holds a later row than a committed row no partition holds.
              const held = seen().flat();
              const lastHeld = held.reduce((last, m) => (m.id > last ? m.id : last), 0n);
              const heldIds = new Set(held.map((m) => m.id));
              coverage.count(
                'a later row held than one lost',
                committed.some((row) => !heldIds.has(row.id) && row.id < lastHeld),
              );
              broker.clearFaults();
              for (const relay of relays) await relay.close();
            }
          }
          // A last relay, undisturbed, finishes the work.
          const last = relayOn(broker, 500);
          await last.run({ untilCaughtUp: true });
          await last.close();
          coverage.add('rows', committed.length);
          coverage.count(
            'an idle partition passed',
            starts.some((start) =>
              (start.partitions ?? []).some(
                (partition) =>
                  partition.lastPublishingId > 0n &&
                  partition.lastPublishingId < highestThrough(start),
              ),
            ),
          );
          // One writer: each key's commit order is the order of `committed`.
          expectExactlyOnPartitions(seen(), committed);
        }),
        PARAMETERS,
      );
      coverage.expectRates({
        'rolled back': 1,
        'fault fired': 0.2,
        aborted: 0.2,
        'two relays': 0.5,
        'two relays with a crash': 0.15,
        'pruned rows': 0.1,
        'pruned while running': 0.1,
        'a later row held than one lost': 0.06,
        'an idle partition passed': 0.25,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});

function highestThrough(start: RelayEventMap['started']): bigint {
  return (start.partitions ?? []).reduce(
    (highest, { through = 0n }) => (through > highest ? through : highest),
    0n,
  );
}
