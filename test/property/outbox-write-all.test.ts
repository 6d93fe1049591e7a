// writeOutboxAll against writeOutbox called for each event in order, on PGlite, over random
// lists of events (every body kind, headers, times, keys repeated or not), after single writes
// of the same transaction and an older committed one, with keys a younger transaction claimed
// and bad events: the same rows and ids, the same key claims, the same OutboxOrderError (at the
// refused event's index; the transaction aborted), the same ConfigError rule named at the bad
// event's index.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, OutboxOrderError } from '../../src/common/errors.js';
import { pglite } from '../../src/pglite/index.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import {
  writeOutbox,
  writeOutboxAll,
  type OutboxStatements,
} from '../../src/outbox/outbox-write.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { pgliteForTests } from '../support/jobs/sink-fixture.js';
import { BAD_OUTBOX_EVENTS } from '../support/jobs/outbox-events.js';
import {
  claimedByYounger,
  counting,
  currentTxid,
  storedClaims,
  storedRows,
  YOUNGER_TXID,
  type StoredOutboxRow,
} from '../support/jobs/outbox-rows.js';

const PARAMETERS = propertyParameters(100);

const db = pgliteForTests();

/** The event times writeOutbox takes. */
const [MIN_TIME_MS, MAX_TIME_MS] = [Date.UTC(-4712, 0, 1), 8.64e15];

const text = (minLength: number): fc.Arbitrary<string> =>
  fc.string({ unit: 'grapheme', minLength, maxLength: 8 }).filter((s) => !s.includes('\0'));

const keyArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'c') },
  // The keys a younger transaction may have claimed.
  { weight: 1, arbitrary: fc.constantFrom('y', 'z') },
  { weight: 2, arbitrary: text(1) },
);

const bodyArb = fc.oneof(
  fc.record({ json: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ msgpack: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record(
    {
      bytes: fc.uint8Array({ maxLength: 40 }),
      contentType: fc.constantFrom('text/plain', 'application/x-"q", \\ {}'),
    },
    { requiredKeys: ['bytes'] },
  ),
);

const eventArb: fc.Arbitrary<OutboxEvent> = fc
  .record({
    key: keyArb,
    body: bodyArb,
    eventTime: fc.oneof(
      fc.integer({ min: MIN_TIME_MS, max: MAX_TIME_MS }),
      fc.date({ noInvalidDate: true, min: new Date(MIN_TIME_MS), max: new Date(MAX_TIME_MS) }),
    ),
    headers: fc.option(
      fc.dictionary(
        text(0).filter((name) => !name.startsWith('sw-')),
        text(0),
        { maxKeys: 3 },
      ),
      { nil: undefined },
    ),
  })
  .map(
    ({ key, body, eventTime, headers }) =>
      ({
        key,
        eventTime,
        ...body,
        ...(headers === undefined ? {} : { headers }),
      }) as OutboxEvent,
  );

const scenarioArb = fc.record({
  /** Keys an older transaction wrote and committed first. */
  older: fc.array(keyArb, { maxLength: 3 }),
  /** Keys a younger transaction claimed and committed meanwhile. */
  younger: fc.option(fc.subarray(['y', 'z'], { minLength: 1 }), { nil: [], freq: 2 }), // half the runs
  /** Written by single writes in the transaction before the list (none refused). */
  prefix: fc.array(
    eventArb.filter((event) => !['y', 'z'].includes(event.key)),
    { maxLength: 3 },
  ),
  list: fc.array(eventArb, { maxLength: 30, size: 'max' }),
  /** A bad event put into the list, in one run of seven. */
  bad: fc.oneof(
    { weight: 6, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.record({ at: fc.nat(), event: fc.constantFrom(...BAD_OUTBOX_EVENTS) }),
    },
  ),
});

class Rollback extends Error {}

/** What one side did: the ids and the error, and what it left in its table. */
interface Outcome {
  ids: bigint[];
  error: unknown;
  /** Statements the list (not the prefix) sent, for the batch side. */
  statements: number;
  /** The statement after the error: refused when PostgreSQL aborted the transaction. */
  afterwards: unknown;
  txid: string;
}

/**
 * Writes `prefix` one by one, then `list` with `write`, in one transaction of `db`; commits
 * unless it failed.
 */
async function side(
  prefix: readonly OutboxEvent[],
  write: (tx: OutboxStatements) => Promise<bigint[]>,
  table: string,
): Promise<Outcome> {
  const outcome: Outcome = {
    ids: [],
    error: undefined,
    statements: 0,
    afterwards: undefined,
    txid: '',
  };
  await db
    .transaction(async (tx) => {
      try {
        for (const event of prefix) await writeOutbox(tx, event, { table });
        outcome.txid = await currentTxid(tx);
        const counted = counting(tx);
        try {
          outcome.ids = await write(counted);
        } finally {
          outcome.statements = counted.statements;
        }
      } catch (error) {
        outcome.error = error;
        outcome.afterwards = await tx.query('SELECT 1').catch((e: unknown) => e);
        throw new Rollback();
      }
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  return outcome;
}

/** `rows` with each transaction id replaced by who wrote it. */
function labelled<Row extends { txid?: string; last_txid?: string }>(
  rows: readonly Row[],
  names: ReadonlyMap<string, string>,
): Row[] {
  return rows.map((row) =>
    'txid' in row
      ? { ...row, txid: names.get(row.txid as string) ?? `unknown ${row.txid}` }
      : { ...row, last_txid: names.get(row.last_txid as string) ?? `unknown ${row.last_txid}` },
  );
}

let runs = 0;

describe('writeOutboxAll (property)', () => {
  it(
    'writes what writeOutbox called for each event in order writes, and refuses what it refuses',
    async () => {
      const coverage = new Coverage('writeOutboxAll');
      await fc.assert(
        fc.asyncProperty(scenarioArb, async ({ older, younger, prefix, list, bad }) => {
          coverage.run();
          runs++;
          const events = [...list];
          if (bad !== null) events.splice(bad.at % (list.length + 1), 0, bad.event as OutboxEvent);
          const [singles, batch] = [`outbox_s${runs}`, `outbox_b${runs}`];
          const olderTxids: string[] = [];
          for (const table of [singles, batch]) {
            await createOutboxTable(pglite(db), table);
            await db.transaction(async (tx) => {
              for (const key of older)
                await writeOutbox(tx, { key, json: 'older', eventTime: 0 }, { table });
              olderTxids.push(await currentTxid(tx));
            });
            for (const key of younger) await claimedByYounger(db, table, key);
          }

          const one = await side(
            prefix,
            async (tx) => {
              const ids: bigint[] = [];
              for (const event of events)
                ids.push(await writeOutbox(tx, event, { table: singles }));
              return ids;
            },
            singles,
          );
          const all = await side(
            prefix,
            (tx) => writeOutboxAll(tx, events, { table: batch }),
            batch,
          );

          const badAt = events.findIndex((event) => BAD_OUTBOX_EVENTS.includes(event));
          if (badAt !== -1) {
            // Refused before anything is sent: the rule writeOutbox states for that event.
            coverage.count('bad event');
            expect(all.error).toBeInstanceOf(ConfigError);
            expect(all.statements).toBe(0);
            const alone = await writeOutbox(db, events[badAt] as OutboxEvent).catch(
              (error: unknown) => error,
            );
            expect((all.error as ConfigError).message).toBe(
              (alone as ConfigError).message.replace(/^outbox /, `outbox events[${badAt}] `),
            );
          } else if (one.error instanceof OutboxOrderError) {
            coverage.count('order refused');
            const refused = one.error.key;
            const at = events.findIndex((event) => event.key === refused);
            coverage.count('refused after other keys', at > 0);
            expect(all.error).toBeInstanceOf(OutboxOrderError);
            // The first event of the refused key: the one single writes stopped at.
            expect(all.error).toMatchObject({ key: refused, index: at });
            expect(all.afterwards, 'the transaction is aborted').toMatchObject({ code: '25P02' });
          } else {
            expect(one.error).toBeUndefined();
            expect(all.error).toBeUndefined();
            expect(all.statements).toBe(events.length === 0 ? 0 : 1);
            expect(all.ids).toEqual(one.ids);
            coverage.count('written');
            coverage.count('empty list', events.length === 0);
            coverage.count(
              'a key repeated',
              new Set(events.map((event) => event.key)).size < events.length,
            );
            coverage.count(
              'a key claimed by the prefix',
              events.some((event) => prefix.some((p) => p.key === event.key)),
            );
            coverage.count(
              'a key claimed by the older transaction',
              events.some((event) => older.includes(event.key)),
            );
            coverage.count(
              'bytes',
              events.some((event) => 'bytes' in event),
            );
            coverage.count(
              'headers',
              events.some((event) => event.headers !== undefined),
            );
            coverage.add('events written', events.length);
          }
          // Ids, keys, times, headers, content types and bodies, transaction by transaction.
          const names = (own: Outcome, olderTxid: string | undefined): Map<string, string> =>
            new Map([
              [own.txid, 'this'],
              [olderTxid ?? '', 'older'],
              [YOUNGER_TXID, 'younger'],
            ]);
          const [singleNames, batchNames] = [names(one, olderTxids[0]), names(all, olderTxids[1])];
          expect(labelled<StoredOutboxRow>(await storedRows(db, batch), batchNames)).toEqual(
            labelled<StoredOutboxRow>(await storedRows(db, singles), singleNames),
          );
          expect(labelled(await storedClaims(db, batch), batchNames)).toEqual(
            labelled(await storedClaims(db, singles), singleNames),
          );
        }),
        PARAMETERS,
      );
      coverage.expectRates({
        written: 0.35,
        'order refused': 0.12,
        'refused after other keys': 0.1,
        'bad event': 0.07,
        'a key repeated': 0.25,
        'a key claimed by the prefix': 0.2,
        'a key claimed by the older transaction': 0.18,
        bytes: 0.25,
        headers: 0.3,
        'events written': 4,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
