import { StreamWindowsError } from '../common/errors.js';

/**
 * Bytes could not be decoded (or a value could not be encoded) by one of the codecs.
 * `position` is the byte offset in the input (for encoding: in the output) where the problem
 * was found, so a corrupt message can be located with a hex dump.
 */
export class CodecError extends StreamWindowsError {
  override readonly name = 'CodecError';
  override readonly code = 'CODEC_FAILED';
  constructor(
    /** What is wrong with the bytes, without the position. */
    readonly problem: string,
    /** The byte offset where it was found, in the input (for encoding: in the output). */
    readonly position: number,
  ) {
    super(`${problem} (at byte ${position})`);
  }

  /**
   * The same error with its position counted from `origin`, the first byte of the message:
   * where a message sits in a chunk differs between brokers and between reads, and an error
   * recorded in a result (a dead letter) must be the same bytes on every replay.
   */
  relativeTo(origin: number): CodecError {
    return origin === 0 ? this : new CodecError(this.problem, this.position - origin);
  }
}

/** Two-digit hex for error messages, e.g. `0x0a`. */
export function hex(code: number): string {
  return `0x${code.toString(16).padStart(2, '0')}`;
}
