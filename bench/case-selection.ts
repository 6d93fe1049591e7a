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
  'failover',
  'partitions',
  'scaling',
  'merge',
  'lookup',
  'outbox-write',
  'sink',
  'outbox',
];

/**
 * Kinds run only when named (`npm run bench -- large-steps`), after the others: too slow for
 * a full run. A run that names one is never a full run.
 */
export const OPT_IN_KINDS: readonly CaseKind[] = ['large-steps'];

/**
 * The kinds `npm run bench -- <kind>...` names, in run order; every kind of CASE_KINDS when
 * none is named. An unknown name is an error listing the known ones, so a typo never runs an
 * empty bench.
 */
export function selectCases(args: readonly string[]): { kinds: CaseKind[]; full: boolean } {
  const known: readonly string[] = [...CASE_KINDS, ...OPT_IN_KINDS];
  const unknown = args.filter((arg) => !known.includes(arg));
  if (unknown.length > 0) {
    throw new Error(
      `unknown bench case ${unknown.map((name) => `'${name}'`).join(', ')}; ` +
        `the cases are ${CASE_KINDS.join(', ')}; run only when named: ${OPT_IN_KINDS.join(', ')}`,
    );
  }
  if (args.length === 0) return { kinds: [...CASE_KINDS], full: true };
  const kinds = [...CASE_KINDS, ...OPT_IN_KINDS].filter((kind) => args.includes(kind));
  return {
    kinds,
    full: kinds.length === CASE_KINDS.length && kinds.every((kind) => CASE_KINDS.includes(kind)),
  };
}
