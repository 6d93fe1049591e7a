import { StreamWindowsError } from '../common/errors.js';

/**
 * The command line was wrong (unknown command or option, missing or malformed value): the
 * CLI prints it with a pointer to the command's help and exits 2, as usage errors do.
 */
export class UsageError extends StreamWindowsError {
  override readonly name = 'UsageError';
  override readonly code = 'CLI_USAGE';
  constructor(
    message: string,
    /** The command whose help to point at; undefined for the top level. */
    readonly command?: string,
  ) {
    super(message);
  }
}
