// The merged sequence of several inputs by definition (docs/internals/many-inputs.md), written
// from the rules and sharing no code with src/: each message's merge time is its event time
// raised to its own input's watermark (the latest event time before it on that input, less the
// disorder allowed; a filtered message, which has no event time, takes the watermark), the
// messages sorted by (merge time, input, offset), and released those below the least watermark
// over the inputs after all their messages. As the event-time model's messages: the merged
// position as offset, the merge time moving the watermark.
import type { ReferenceMessage } from './event-time-reference.js';

/** One message of one input, in offset order; `drop`: the job's filter refuses it. */
export interface MergedInputMessage {
  readonly time: number;
  readonly key: string;
  readonly value: number;
  readonly drop?: true;
}

interface Placed {
  readonly mergeTime: number;
  readonly input: number;
  readonly offset: number;
  readonly message: MergedInputMessage;
}

/** What a job over `inputs` (no input ever left out as idle) hands its windows, in order. */
export function mergedReference(
  inputs: readonly (readonly MergedInputMessage[])[],
  maxOutOfOrderness: number,
  key: (message: MergedInputMessage) => string,
): ReferenceMessage[] {
  const placed: Placed[] = [];
  let bound = Infinity;
  inputs.forEach((messages, input) => {
    let latest = -Infinity;
    messages.forEach((message, offset) => {
      const watermark = latest - maxOutOfOrderness;
      const mergeTime = message.drop === true ? watermark : Math.max(message.time, watermark);
      placed.push({ mergeTime, input, offset, message });
      if (message.drop !== true) latest = Math.max(latest, message.time);
    });
    bound = Math.min(bound, latest - maxOutOfOrderness);
  });
  placed.sort((a, b) => a.mergeTime - b.mergeTime || a.input - b.input || a.offset - b.offset);
  return placed
    .filter((item) => item.mergeTime < bound)
    .map(({ mergeTime, message }, position) => ({
      offset: position,
      key: key(message),
      time: message.time,
      value: message.value,
      ...(message.drop === true ? { filtered: true } : { watermarkTime: mergeTime }),
    }));
}
