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
