/**
 * The JSON text of `value`, or undefined when it has none (undefined, a function, a symbol), as
 * JSON.stringify answers though its lib type says string. Throws as it does (a bigint, a cycle).
 */
export function jsonText(value: unknown): string | undefined {
  return JSON.stringify(value);
}
