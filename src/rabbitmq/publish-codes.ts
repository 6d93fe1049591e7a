/**
 * Response codes of the stream protocol (PROTOCOL.adoc "Response codes") as they matter to
 * a publisher: what to call them in an error, and whether trying again can help.
 */
const NAMES: Readonly<Record<number, string>> = {
  0x02: 'stream does not exist',
  0x06: 'stream not available',
  0x0c: 'virtual host access failure',
  0x0e: 'frame too large',
  0x0f: 'internal error',
  0x10: 'access refused',
  0x11: 'precondition failed',
  0x12: 'publisher does not exist',
};

export const STREAM_DOES_NOT_EXIST = 0x02;
export const STREAM_ALREADY_EXISTS = 0x05;
export const PUBLISHER_DOES_NOT_EXIST = 0x12;

/**
 * Codes that may clear by themselves: the stream is between leaders, the broker hiccuped,
 * or it dropped our publisher (which the target declares again).
 */
const RETRIABLE = new Set([0x06, 0x0f, PUBLISHER_DOES_NOT_EXIST]);

export function codeName(code: number): string {
  return NAMES[code] ?? `response code 0x${code.toString(16).padStart(2, '0')}`;
}

export function isRetriable(code: number): boolean {
  return RETRIABLE.has(code);
}
