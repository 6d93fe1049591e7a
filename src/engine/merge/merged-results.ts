import type { Source } from '../../ports/ports.js';
import type { MessageValuesDecoder } from '../../result-format/results-source.js';
import { MergedInputs } from './merged-inputs.js';

/**
 * The result streams of other jobs read as ONE input of a job (`mergeInputs([fromResults(...),
 * ...])`): stage 2 over a partitioned stage 1. Each result is read whole by its input's
 * decoder, and is one item of the merge (docs/internals/many-inputs.md).
 */
export class MergedResults<V> extends MergedInputs {
  constructor(
    inputs: readonly Source[],
    idleAfterMs: number | undefined,
    maxBufferedPerInput: number,
    /** Each input's reader of a result into its values, in the inputs' order. */
    readonly decoders: readonly MessageValuesDecoder<V>[],
  ) {
    super(inputs, idleAfterMs, maxBufferedPerInput);
  }
}
