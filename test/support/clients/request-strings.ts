// Reading back the strings of the stock client's request frames: each one an int16 byte count,
// then its UTF-8 bytes.

/** Size prefix, key, version and correlation id of a request with a correlation id. */
export const HEADER = 4 + 2 + 2 + 4;

/** Reads the protocol string at `at` of `frame`: its text and where the next field starts. */
export function stringAt(frame: Buffer, at: number): { text: string; next: number } {
  const bytes = frame.readInt16BE(at);
  return { text: frame.toString('utf8', at + 2, at + 2 + bytes), next: at + 2 + bytes };
}
