// The outbox relay under random transactions, crashes and concurrent relays, on PGlite and the
// embedded broker: whatever happens between them, once a relay ran to the end the stream holds
// exactly the committed rows, each once, in (txid, id) order, each key's rows in commit order.
// A crash is a fault on the relay's producer (before or after a publish is stored, after its
// confirm, or a lost confirm) or the run's signal aborted at a random published batch; a crashed
// relay is closed and a new one of the same name started, as a restarted process would. Some
// steps run two relays of one name at once, over two simulated connections.
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import type { FaultPoint } from '../../src/memory/errors.js';
import { pglite } from '../../src/pglite/index.js';
import { OutboxRelay, type RelayBroker } from '../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { pgliteForTests } from '../support/jobs/sink-fixture.js';
import {
  expectExactlyCommitted,
  seenOutboxMessage,
  type CommittedRow,
  writeOnPglite,
} from '../support/jobs/outbox-fixture.js';

const PARAMETERS = propertyParameters(150);

const db = pgliteForTests();

type Crash =
  | { readonly kind: 'none' }
  | { readonly kind: 'fault'; readonly point: FaultPoint; readonly atPublish: number }
  | { readonly kind: 'abort'; readonly atBatch: number };

type Step =
  | { readonly kind: 'tx'; readonly keys: readonly string[]; readonly rollback: boolean }
  | {
      readonly kind: 'relay';
      readonly crash: Crash;
      readonly two: boolean;
      readonly maxBatchRows: number;
    }
  | { readonly kind: 'prune' };

const crashArb: fc.Arbitrary<Crash> = fc.oneof(
  { weight: 1, arbitrary: fc.constant<Crash>({ kind: 'none' }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      point: fc.constantFrom<FaultPoint>(
        'before-publish',
        'after-publish',
        'after-confirm',
        'lose-confirm',
      ),
      atPublish: fc.integer({ min: 1, max: 15 }),
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
      keys: fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { minLength: 1, maxLength: 20 }),
      rollback: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('relay' as const),
      crash: crashArb,
      two: fc.boolean(),
      maxBatchRows: fc.integer({ min: 1, max: 8 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('prune' as const) }) },
);

const scenarioArb = fc.array(stepArb, { minLength: 3, maxLength: 14 });

let runs = 0;

describe('outbox relay (property)', () => {
  it(
    'the stream holds exactly the committed rows, once each, in relay order, whatever crashes and concurrent relays',
    async () => {
      const coverage = new Coverage('outbox relay');
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (steps) => {
          coverage.run();
          runs++;
          const table = `outbox_p${runs}`;
          const stream = `outbox-p${runs}`;
          const broker = new MemoryBroker();
          broker.createStream(stream);
          await createOutboxTable(pglite(db), table);
          const second: RelayBroker = {
            target: (s, o) => broker.target(s, { ...o, connection: 'relay-2' }),
          };
          const relayOn = (on: RelayBroker, maxBatchRows: number): OutboxRelay =>
            new OutboxRelay({
              name: 'relay',
              database: pglite(db),
              table,
              broker: on,
              to: stream,
              maxBatchRows,
              pollIntervalMs: 1,
              retryDelayMs: 1,
              warnAfterRetries: Infinity,
            });
          const committed: CommittedRow[] = [];
          const keyOrder = new Map<string, bigint[]>();
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
              for (const row of rows) {
                keyOrder.set(row.key, [...(keyOrder.get(row.key) ?? []), row.id]);
              }
            } else if (step.kind === 'prune') {
              const relay = relayOn(broker, 1);
              coverage.count('pruned rows', (await relay.prune()) > 0);
              await relay.close();
            } else {
              const { crash } = step;
              const controller = new AbortController();
              const fault =
                crash.kind === 'fault'
                  ? broker.injectFault({
                      stream,
                      producer: 'relay',
                      atPublish: crash.atPublish,
                      point: crash.point,
                      // A lost confirm is retried by the run itself; a crash kills the process.
                      onFire: () => {
                        if (crash.point !== 'lose-confirm') controller.abort();
                      },
                    })
                  : undefined;
              const relays = [relayOn(broker, step.maxBatchRows)];
              if (step.two) relays.push(relayOn(second, step.maxBatchRows));
              let batches = 0;
              for (const relay of relays) {
                relay.on('published', () => {
                  batches++;
                  if (crash.kind === 'abort' && batches === crash.atBatch) controller.abort();
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
              coverage.count('fault fired', fault?.fired === true);
              coverage.count('aborted', crash.kind === 'abort' && controller.signal.aborted);
              coverage.count('two relays', step.two);
              coverage.count('two relays with a crash', step.two && controller.signal.aborted);
              broker.clearFaults();
              for (const relay of relays) await relay.close();
            }
          }
          // A last relay, undisturbed, finishes the work.
          const last = relayOn(broker, 500);
          await last.run({ untilCaughtUp: true });
          await last.close();
          coverage.add('rows', committed.length);
          const seen = broker.messages(stream).map((m) => seenOutboxMessage(m.bytes));
          expectExactlyCommitted(seen, committed, keyOrder);
        }),
        PARAMETERS,
      );
      coverage.expectRates({
        'rolled back': 1,
        'fault fired': 0.15,
        aborted: 0.25,
        'two relays': 0.7,
        'two relays with a crash': 0.2,
        'pruned rows': 0.05,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
