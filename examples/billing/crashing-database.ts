import type { SinkDatabase, SinkTransaction } from '../../src/index.js';
import { DemoCrash } from '../crashing-target.js';

/**
 * A sink database whose process dies at the `atWrite`-th transaction that writes to `table`
 * (quoted as the sink's SQL quotes it, `"schema"."table"`):
 * 'before-commit' dies after the rows were written, inside the transaction (so it rolls back,
 * as when a process dies mid-transaction); 'after-commit' lets the transaction commit and dies
 * before the sink learns it did. After that every call fails, as nothing runs after a crash.
 */
export function crashingDatabase(
  database: SinkDatabase,
  table: string,
  atWrite: number,
  point: 'before-commit' | 'after-commit',
): SinkDatabase {
  let writes = 0;
  let dead = false;
  const alive = () => {
    if (dead) throw new DemoCrash('the process is gone');
  };
  return {
    isRetriable: (error) => database.isRetriable(error),
    close: () => database.close(),
    transaction: async (work) => {
      alive();
      let wrote = false;
      const result = await database.transaction(async (tx) => {
        const watched: SinkTransaction = {
          query: (sql, params) => {
            wrote ||= sql.startsWith(`INSERT INTO ${table} `);
            return tx.query(sql, params);
          },
        };
        const done = await work(watched);
        dead = wrote && ++writes === atWrite;
        if (dead && point === 'before-commit') {
          throw new DemoCrash(`crashed before committing write ${atWrite}`);
        }
        return done;
      });
      if (dead)
        throw new DemoCrash(`crashed after committing write ${atWrite}, before the sink saw it`);
      return result;
    },
  };
}
