// An event-time case (test/support/arbitraries/event-time-arbitrary.ts) as a job of the
// library: its source messages, the job over them, and its results read back in the reference
// model's terms (with the model's aggregate, `sumOfValues`).
import {
  aggregate,
  count,
  decodeResult,
  hopping,
  jsonMessage,
  session,
  tumbling,
  type Aggregator,
  type EarlyUpdates,
  type EventTimeWindowSpec,
  type Source,
  type Target,
  type TargetOptions,
} from '../../../src/index.js';
import type {
  ReferenceConfig,
  ReferenceMessage,
  ReferenceOutput,
  ReferenceResult,
  ReferenceWindow,
} from '../models/event-time-reference.js';

/** The source messages of a case: one JSON message per reference message. */
export function caseMessages(messages: readonly ReferenceMessage[]): Uint8Array[] {
  return messages.map((m) => jsonMessage(m));
}

function windowSpec(window: ReferenceWindow): EventTimeWindowSpec {
  switch (window.type) {
    case 'tumbling':
      return tumbling(window.size, { grace: window.grace });
    case 'hopping':
      return hopping(window.size, window.advance, { grace: window.grace });
    case 'session':
      return session(window.gap, { grace: window.grace });
    case 'count':
      return count(window.n, { perKey: true });
  }
}

/** What the reference model aggregates: the sum of each window's values. */
export const sumOfValues: Aggregator<ReferenceMessage, number, number> = {
  init: () => 0,
  add: (sum, m) => sum + m.value,
  result: (sum) => sum,
  merge: (a, b) => a + b,
};

/**
 * How a case's job writes its results (the library's defaults where not given), and its
 * early updates (none by default).
 */
export interface CaseJobOptions extends Pick<
  TargetOptions,
  'pack' | 'format' | 'retryDelayMs' | 'flush'
> {
  readonly early?: EarlyUpdates;
}

/**
 * The case's job: filter, event time, key, the window, and `aggregator` over each window
 * (sessions need its merge).
 */
export function caseJob<A, R>(
  config: ReferenceConfig,
  source: Source,
  target: Target,
  aggregator: Aggregator<ReferenceMessage, A, R>,
  { early, ...targetOptions }: CaseJobOptions = {},
) {
  let pipeline = aggregate<ReferenceMessage>(source)
    .filter((m) => m.filtered !== true)
    .eventTime((m) => m.time)
    .key((m) => m.key)
    .window(windowSpec(config.window));
  // Count windows close by count only: they have neither a watermark nor late messages.
  if (config.window.type !== 'count') {
    pipeline = pipeline.maxOutOfOrderness(config.maxOutOfOrderness).late(config.late);
  }
  if (early !== undefined) pipeline = pipeline.emit({ early });
  return pipeline.aggregate(aggregator).to(target, targetOptions);
}

/**
 * A target's results in the reference model's terms (one per step, by its last offset, its
 * messages joined), their final outputs only: with `early`, `earlyOutputs` collects the others.
 */
export function asReferenceResults(
  messages: readonly Uint8Array[],
  earlyOutputs: (ReferenceOutput & { decision: number })[] = [],
): ReferenceResult[] {
  const results: ReferenceResult[] = [];
  for (const bytes of messages) {
    const result = decodeResult<number>(bytes);
    const decision = Number(result.lastOffset);
    let into = results.at(-1);
    if (into?.decision !== decision) {
      into = {
        decision,
        firstOffset: Number(result.firstOffset),
        messages: result.messages,
        outputs: [],
        late: [],
        lateDropped: result.lateDropped,
        filtered: result.filtered,
      };
      results.push(into);
    }
    for (const o of result.outputs) {
      const output = {
        key: String(o.key),
        start: o.start,
        end: o.end,
        count: o.count,
        sum: o.value,
      };
      if (o.final) into.outputs.push(output);
      else earlyOutputs.push({ ...output, decision });
    }
    for (const late of result.late) into.late.push((late as ReferenceMessage).value);
  }
  return results;
}
