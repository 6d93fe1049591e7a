import type { Style } from './style.js';

/** One line of a table: each cell padded to its column's width, two spaces between columns. */
export function tableRow(cells: readonly string[], widths: readonly number[]): string {
  return cells
    .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
    .join('  ')
    .trimEnd();
}

/** A whole table, header in bold, columns as wide as their widest cell. */
export function table(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  style: Style,
): string[] {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  return [style.bold(tableRow(headers, widths)), ...rows.map((row) => tableRow(row, widths))];
}

/** An epoch-ms time as ISO 8601 UTC, or the number itself when it is no date. */
export function isoTime(ms: number | undefined): string {
  if (ms === undefined) return '-';
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}

/** A duration for people: "850 ms", "12.5 s", "3m 07s", "2h 05m". */
export function humanDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}
