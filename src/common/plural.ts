/** A count and its noun, as people write it: "1 result", "2 results", "0 results". */
export function counted(count: number | bigint, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 || count === 1n ? singular : plural}`;
}
