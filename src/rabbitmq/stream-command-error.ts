import { StreamWindowsError } from '../common/errors.js';
import { codeName, isRetriableCode } from '../common/stream-protocol.js';

/** A stream protocol command was refused by the broker. */
export class StreamCommandError extends StreamWindowsError {
  override readonly name = 'StreamCommandError';
  override readonly code = 'STREAM_COMMAND_REFUSED';
  /** Whether trying again later may succeed (the response-code table's verdict). */
  readonly retriable: boolean;
  constructor(
    /** The refused command: 'create', 'delete', 'create super stream', 'partitions', ... */
    readonly command: string,
    /** The stream (or super stream) it was for. */
    readonly stream: string,
    /** The broker's response code. */
    readonly responseCode: number,
  ) {
    super(
      `${command} of stream '${stream}' failed (code ${responseCode}): ${codeName(responseCode)}`,
    );
    this.retriable = isRetriableCode(responseCode);
  }
}
