import { StreamWindowsError } from '../common/errors.js';

/**
 * `status --sink` could not read a sink's checkpoints: the `pg` package is not installed, the
 * database is unreachable or refuses, or it has no checkpoint table. The CLI exits 1.
 * `database` names the database without its password.
 */
export class CheckpointDatabaseError extends StreamWindowsError {
  override readonly name = 'CheckpointDatabaseError';
  override readonly code = 'CLI_CHECKPOINT_DATABASE';
  constructor(
    readonly database: string,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message, { cause });
  }
}
