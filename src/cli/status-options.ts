import type { OptionValues } from './command.js';
import { UsageError } from './usage-error.js';

/** The options of one kind of `status` only (a sink's, a relay's), each with the flag that takes it. */
const OWNED_OPTIONS = [
  ['database', '--sink or --relay'],
  ['checkpoint-table', '--sink'],
  ['stream', '--relay'],
  ['table', '--relay'],
] as const;

/**
 * Refuses the options of another kind of status than the one run, which takes `allowed`:
 * "status takes --stream and --table with --relay only".
 */
export function refuseOthersOptions(values: OptionValues, allowed: readonly string[]): void {
  const wrong = OWNED_OPTIONS.filter(
    ([name]) => values[name] !== undefined && !allowed.includes(name),
  );
  if (wrong.length === 0) return;
  const owners = [...new Set(wrong.map(([, owner]) => owner))];
  const parts = owners.map((owner) => {
    const names = wrong.filter(([, of]) => of === owner).map(([name]) => `--${name}`);
    return `${names.join(' and ')} with ${owner} only`;
  });
  throw new UsageError(`status takes ${parts.join(', ')}`, 'status');
}

/** What one kind of `status` takes and refuses. */
export interface StatusOptionRules {
  /** The options of a job's status, refused. */
  readonly jobOptions: readonly string[];
  /** Its own of the options `refuseOthersOptions` knows. */
  readonly allowed: readonly string[];
  /** The two options of which it takes exactly one. */
  readonly oneOf: readonly [string, string];
}

/**
 * Checks the options of `status --<kind>`, in this order: none of a job's `jobOptions` ("status
 * --sink takes --source or --super-stream, not a job's --target"), none of another kind's (see
 * `refuseOthersOptions`, `allowed` its own), and exactly one of `either` and `or`.
 */
export function checkStatusOptions(
  values: OptionValues,
  kind: 'sink' | 'relay',
  { jobOptions, allowed, oneOf: [either, or] }: StatusOptionRules,
): void {
  const given = jobOptions.filter((name) => values[name] !== undefined);
  if (given.length > 0) {
    throw new UsageError(
      `status --${kind} takes --${either} or --${or}, not a job's ` +
        given.map((name) => `--${name}`).join(', '),
      'status',
    );
  }
  refuseOthersOptions(values, allowed);
  if ((values[either] === undefined) === (values[or] === undefined)) {
    throw new UsageError(`status --${kind} takes one of --${either} and --${or}`, 'status');
  }
}
