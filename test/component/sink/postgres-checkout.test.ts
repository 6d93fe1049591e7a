// The PostgreSQL adapter hears a client's connection from the moment the pool hands it over.
// pg parses every message of one socket read at once: when the server ends a session in the same
// read that completes its connection (`pg_terminate_backend` right after a connect, seen under
// load in the sink's fault test), the client emits 'error' before an awaited `pool.connect()`
// resumes; with no listener then, Node ends the process. A pool double hands a client over and
// has it emit that error at once, as pg would.
import { EventEmitter } from 'node:events';
import type { Pool, PoolClient } from 'pg';
import { describe, expect, it } from 'vitest';
import { postgres } from '../../../src/postgres/index.js';

/** A client whose queries succeed, and what became of it. */
class ClientDouble extends EventEmitter {
  released: unknown = 'not released';
  unheard: Error[] = [];
  query(sql: string): Promise<{ rows: never[]; rowCount: number; command: string }> {
    return Promise.resolve({ rows: [], rowCount: 0, command: sql });
  }
  release(error?: unknown): void {
    this.released = error;
  }
  /** As pg's client emits it, but recorded instead of thrown when nobody listens. */
  fail(error: Error): void {
    if (this.listenerCount('error') === 0) this.unheard.push(error);
    else this.emit('error', error);
  }
}

/** A pool that hands `client` over as pg-pool does (callback first), then ends its session in the same turn. */
function poolEndingAtOnce(client: ClientDouble): Pool {
  const ended = Object.assign(new Error('terminating connection due to administrator command'), {
    code: '57P01',
  });
  const pool = new EventEmitter() as EventEmitter & {
    connect: (callback?: (error: undefined, client: PoolClient) => void) => unknown;
  };
  pool.connect = (callback) => {
    let handed: ((value: PoolClient) => void) | undefined;
    const promise = new Promise<PoolClient>((resolve) => (handed = resolve));
    setImmediate(() => {
      const asClient = client as unknown as PoolClient;
      if (callback === undefined) handed?.(asClient);
      else callback(undefined, asClient);
      client.fail(ended);
    });
    return callback === undefined ? promise : undefined;
  };
  return pool as unknown as Pool;
}

describe('the PostgreSQL adapter checking a client out', () => {
  it('hears an error the client raises in the turn the pool hands it over, and destroys the client', async () => {
    const client = new ClientDouble();
    const database = postgres(poolEndingAtOnce(client));
    await database.transaction(async (tx) => {
      await tx.query('SELECT 1');
    });
    expect(client.unheard).toEqual([]);
    // Released with the error: the pool destroys it rather than hand it out again.
    expect(client.released).toMatchObject({ code: '57P01' });
    expect(client.listenerCount('error')).toBe(0);
  });
});
