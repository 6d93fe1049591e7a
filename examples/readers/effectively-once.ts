// A reader that stays effectively-once on its own: what it makes of a whole step and where to
// read on after it are written in ONE database transaction, and it resumes from there. A step
// applied again after a crash is impossible: its position was stored with its effects, and a
// step read again from there is known by its producer's last step applied, stored with them too.
import type { Apply } from './result-message.js';

type Query = (sql: string, params?: unknown[]) => Promise<{ rows: unknown[] }>;

/** The part of a SQL client this needs (PGlite has it; wrap node-postgres' BEGIN/COMMIT). */
export interface Database {
  query: Query;
  transaction<T>(work: (tx: { query: Query }) => Promise<T>): Promise<T>;
}

export async function createTables(db: Database): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS totals (
    key text NOT NULL, window_start bigint NOT NULL, value double precision NOT NULL,
    PRIMARY KEY (key, window_start))`);
  await db.query(`CREATE TABLE IF NOT EXISTS set_aside (
    stream_offset bigint NOT NULL, kind text NOT NULL, content jsonb NOT NULL)`);
  // Offsets are 64-bit: kept as decimal text, exact in every language.
  await db.query(`CREATE TABLE IF NOT EXISTS reader_position (
    reader text PRIMARY KEY, next_offset text NOT NULL)`);
  // Per producer, the sw-last-offset of its last step applied.
  await db.query(`CREATE TABLE IF NOT EXISTS reader_steps (
    reader text NOT NULL, producer text NOT NULL, last_offset text NOT NULL,
    PRIMARY KEY (reader, producer))`);
}

/** Where `reader` starts: the position stored with the last step it applied, or 'first'. */
export async function startingPoint(db: Database, reader: string): Promise<'first' | bigint> {
  const { rows } = await db.query('SELECT next_offset FROM reader_position WHERE reader = $1', [
    reader,
  ]);
  const row = rows[0] as { next_offset: string } | undefined;
  return row === undefined ? 'first' : BigInt(row.next_offset);
}

/** Applies each step's outputs to `totals` and sets aside late values and dead letters. */
export function applyInOneTransaction(db: Database, reader: string): Apply {
  return (step) =>
    db.transaction(async (tx) => {
      const { rows } = await tx.query(
        'SELECT last_offset FROM reader_steps WHERE reader = $1 AND producer = $2',
        [reader, step.producer],
      );
      const applied = rows[0] as { last_offset: string } | undefined;
      // Read again (resumed before it, while another producer's step was open): skip it.
      if (applied === undefined || BigInt(applied.last_offset) < step.lastOffset) {
        for (const section of step.sections) {
          if (section.type === 'output') {
            // A window's output replaces an early update of it; a continuation adds to it.
            await tx.query(
              `INSERT INTO totals (key, window_start, value) VALUES ($1, $2, $3)
               ON CONFLICT (key, window_start) DO UPDATE SET value =
                 CASE WHEN $4 THEN totals.value + EXCLUDED.value ELSE EXCLUDED.value END`,
              [String(section.key), section.start, section.value, section.continues === true],
            );
          } else {
            // Late values and dead letters are never outputs: keep them where someone looks.
            const content = section.type === 'late' ? section.values : section.records;
            await tx.query(
              'INSERT INTO set_aside (stream_offset, kind, content) VALUES ($1, $2, $3)',
              [String(step.offset), section.type, JSON.stringify(content, asJson)],
            );
          }
        }
        await tx.query(
          `INSERT INTO reader_steps (reader, producer, last_offset) VALUES ($1, $2, $3)
           ON CONFLICT (reader, producer) DO UPDATE SET last_offset = EXCLUDED.last_offset`,
          [reader, step.producer, String(step.lastOffset)],
        );
      }
      await tx.query(
        `INSERT INTO reader_position (reader, next_offset) VALUES ($1, $2)
         ON CONFLICT (reader) DO UPDATE SET next_offset = EXCLUDED.next_offset`,
        [reader, String(step.resumeFrom)],
      );
    });
}

/** JSON for what msgpack gives and JSON lacks: int64 as decimal text, binary as base64. */
function asJson(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return value;
}
