import { alignedWindows } from './aligned-windows.js';
import type {
  EventTimeWindows,
  KindRules,
  WindowContext,
  WindowKind,
  WindowsOf,
} from './event-time-kind.js';
import { mergingSessions } from './merging-sessions.js';
import { perKeyCounts } from './per-key-counts.js';

/**
 * The event-time window kinds, by the `type` of a spec's assignment: a new kind is a file
 * implementing WindowKind and one line here (its assignment joins WindowAssignment by it).
 */
const KINDS = {
  aligned: alignedWindows,
  merging: mergingSessions,
  count: perKeyCounts,
} as const;

type AssignmentOf<K> = K extends WindowKind<infer S> ? S : never;

/** How elements are assigned to windows: the settings of one registered kind. */
export type WindowAssignment = {
  [Type in keyof typeof KINDS]: AssignmentOf<(typeof KINDS)[Type]>;
}[keyof typeof KINDS];

/** The kind an assignment's `type` names. */
function kindOf(assignment: WindowAssignment): WindowKind<WindowAssignment> {
  return KINDS[assignment.type];
}

/** The windows of an assignment's kind, for one run of a job. */
export function createWindows<T, A>(
  assignment: WindowAssignment,
  context: WindowContext<T, A>,
  options: { readonly multiValue: boolean },
): EventTimeWindows<T> {
  return kindOf(assignment).create(assignment, context, options);
}

/** The windows an element at a time opens alone under an assignment (the range check's probe). */
export function windowsOfAssignment(assignment: WindowAssignment): WindowsOf {
  return kindOf(assignment).windowsOf(assignment);
}

/** How long after its end the watermark closes a window of the assignment; undefined: it does not. */
export function graceOf(assignment: WindowAssignment): number | undefined {
  return kindOf(assignment).graceOf(assignment);
}

/** What an assignment's kind takes of a job's settings and needs of its aggregate. */
export function rulesOf(assignment: WindowAssignment): KindRules {
  return kindOf(assignment);
}
