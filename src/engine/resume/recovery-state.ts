import type { RecoveryState } from '../../result-format/step-result.js';
import type { ResumeStart } from './resume-point.js';

/**
 * Rule 5 of ./resume-point.ts: the recovery state of the producer's result under its last id,
 * undefined when the producer never published (a last id of 0 and no result under it). A
 * result that should be there and is not, or carries no recovery state, stops the job.
 */
export function recoveryStateOf(start: ResumeStart): RecoveryState | undefined {
  const { lastId, lastResult: result } = start;
  // Always read for event-time windows (their processor reads the last result).
  if (result === undefined || result.kind === 'missing') {
    if (lastId === 0n) return undefined;
    throw start.recoveryError(
      'the target holds no result of it under that id (removed by retention, or the name was used by another job)',
    );
  }
  if (result.kind === 'unreadable') {
    throw start.recoveryError(`its result cannot be read: ${result.reason}`);
  }
  const { recovery } = result.header;
  if (recovery === undefined) {
    throw start.recoveryError(
      'its result carries no recovery state (written by a job without event-time windows)',
    );
  }
  return recovery;
}
