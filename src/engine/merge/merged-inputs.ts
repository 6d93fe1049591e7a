import type { Source } from '../../ports/ports.js';

/**
 * Several sources read as ONE input of a job (`mergeInputs([...])`): their messages merged by
 * event time into one sequence any reading order reproduces (./input-merge.ts), whose merged
 * positions are the job's offsets. The order of the inputs is part of the job's definition.
 */
export class MergedInputs {
  /**
   * The job's source as results (`sw-source`), logs and events name it: `merge(a,b)` for inputs
   * 'a' and 'b' (the results' `sw-job` lists the inputs themselves).
   */
  readonly stream: string;

  constructor(
    /** The inputs, in the job's order: an input's index is its place in every merge record. */
    readonly inputs: readonly Source[],
    /**
     * Wall-clock ms an input's read may deliver nothing before the merge leaves it out of its
     * bound (`MergeOptions.idleAfter`); undefined: never.
     */
    readonly idleAfterMs: number | undefined,
    /**
     * Messages an input may hold in the merge, waiting for a lagging input, before its read
     * pauses (`MergeOptions.maxBufferedPerInput`).
     */
    readonly maxBufferedPerInput: number,
  ) {
    this.stream = `merge(${inputs.map((input) => input.stream).join(',')})`;
  }

  /** Each input's end offset, in the inputs' order. */
  endOffsets(): Promise<bigint[]> {
    return Promise.all(this.inputs.map((input) => input.endOffset()));
  }

  /**
   * The merged position after every message the inputs hold now: the sum of their end
   * offsets (positions number the messages of all inputs, from 0).
   */
  async endOffset(): Promise<bigint> {
    return positionAfter(await this.endOffsets());
  }
}

/** The merged position after every message of inputs whose end offsets are `ends`. */
export function positionAfter(ends: readonly bigint[]): bigint {
  return ends.reduce((sum, end) => sum + end, 0n);
}
