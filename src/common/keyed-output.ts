/** A key as a step groups by it: `null` when the job has no key function. */
export type Key = string | number | null;

/** One key's result within a step: its key, how many values it absorbed, and the aggregate. */
export interface KeyedOutput<R> {
  readonly key: Key;
  readonly count: number;
  readonly value: R;
}
