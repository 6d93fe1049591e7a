import { Placement, TriggerResult, type WindowSpec } from '../../../src/windows/index.js';

/** One step as the runner would publish it. */
export interface DrivenStep {
  readonly times: readonly number[];
  readonly start: number;
  readonly end: number;
}

export interface DriveResult {
  /** Steps that ended (by a later element or by their trigger). */
  readonly fired: readonly DrivenStep[];
  /** The step still open when the input ended, if any. */
  readonly open: DrivenStep | undefined;
  /** Elements placed Late (and dropped, under the 'drop' policy). */
  readonly late: readonly number[];
}

/**
 * Drives a window spec over event times the way the runner does (one open window, a step
 * ends before a Later element or after a FireAndPurge), so tests can state whole steps.
 */
export function drive(
  spec: WindowSpec,
  eventTimes: readonly number[],
  latePolicy: 'include' | 'drop' = 'drop',
): DriveResult {
  const assigner = spec.createAssigner();
  const trigger = spec.createTrigger();
  const fired: DrivenStep[] = [];
  const late: number[] = [];
  let times: number[] = [];

  const fire = (): void => {
    fired.push({ times, ...assigner.snapshot() });
    times = [];
  };
  const join = (t: number): void => {
    times.push(t);
    if (trigger.onElement() === TriggerResult.FireAndPurge) {
      fire();
      trigger.clear();
    }
  };

  for (const t of eventTimes) {
    if (times.length === 0) {
      assigner.open(t);
      assigner.add(t);
      join(t);
      continue;
    }
    switch (assigner.place(t)) {
      case Placement.Inside:
        assigner.add(t);
        join(t);
        break;
      case Placement.Later:
        fire();
        trigger.clear();
        assigner.open(t);
        assigner.add(t);
        join(t);
        break;
      case Placement.Late:
        late.push(t);
        if (latePolicy === 'include') join(t);
        break;
    }
  }
  return { fired, open: times.length === 0 ? undefined : { times, ...assigner.snapshot() }, late };
}

/** Runs `fn` and returns the error it throws, for assertions on its fields and text. */
export function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`threw a non-Error: ${String(error)}`);
  }
  throw new Error('did not throw');
}

/**
 * A setting as JavaScript passes it, past the types (which refuse '1 minute' or '1d' where a
 * fixed duration goes): what the factories' own checks are for.
 */
export function untyped(value: unknown): never {
  return value as never;
}
