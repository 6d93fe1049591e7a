import type { CaseKind } from './report.js';

/** Every case kind of `npm run bench`, in the order a full run measures them. */
export const CASE_KINDS: readonly CaseKind[] = [
  'hot-path',
  'codec',
  'frames',
  'memory',
  'recovery',
  'event-time',
  'observe',
  'e2e',
  'partitions',
  'scaling',
  'lookup',
  'sink',
];

/**
 * The kinds `npm run bench -- <kind>...` names, in run order; every kind when none is named.
 * An unknown name is an error listing the known ones, so a typo never runs an empty bench.
 */
export function selectCases(args: readonly string[]): { kinds: CaseKind[]; full: boolean } {
  const unknown = args.filter((arg) => !(CASE_KINDS as readonly string[]).includes(arg));
  if (unknown.length > 0) {
    throw new Error(
      `unknown bench case ${unknown.map((name) => `'${name}'`).join(', ')}; ` +
        `the cases are ${CASE_KINDS.join(', ')}`,
    );
  }
  if (args.length === 0) return { kinds: [...CASE_KINDS], full: true };
  const kinds = CASE_KINDS.filter((kind) => args.includes(kind));
  return { kinds, full: kinds.length === CASE_KINDS.length };
}
