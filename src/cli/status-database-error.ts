import { StreamWindowsError } from '../common/errors.js';

/**
 * `status --sink` or `status --relay` could not read from PostgreSQL: the `pg` package is not
 * installed, the database is unreachable or refuses, or it has no such table (the sink's
 * checkpoints, the relay's outbox). The CLI exits 1. `database` names the database without
 * its password.
 */
export class StatusDatabaseError extends StreamWindowsError {
  override readonly name = 'StatusDatabaseError';
  override readonly code = 'CLI_STATUS_DATABASE';
  constructor(
    readonly database: string,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message, { cause });
  }
}
