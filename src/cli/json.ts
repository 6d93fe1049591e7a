/**
 * JSON for the CLI's `--json` output: bigints (offsets, publishing ids) as decimal strings,
 * since JSON numbers lose precision above 2^53 in most readers, and binaries (dead letters'
 * messages) as base64, as the result format's JSON packing writes them.
 */
export function toJson(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key: string, v: unknown) {
    // The value before any toJSON: a Buffer's own would make it an array of numbers.
    const raw = this[key];
    if (typeof raw === 'bigint') return raw.toString();
    if (raw instanceof Uint8Array) return Buffer.from(raw).toString('base64');
    return v;
  });
}
