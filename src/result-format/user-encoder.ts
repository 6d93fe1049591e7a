import { sourceMessage } from '../codecs/source-message.js';
import type { StepResult } from './step-result.js';

/**
 * What a user's `encode` gives for one step: the body of ONE target message, or the bodies
 * of ONE sub-entry batch — one write under the step's publishing id either way.
 */
export type EncodedBodies = Uint8Array | readonly Uint8Array[];

/**
 * A user's encoder as the runner calls it: each body becomes an AMQP 1.0 message with that
 * one data section, which any client reads as the message's body. A wrong return value
 * throws a TypeError, which the runner reports as the step's 'encode' ProcessingError.
 */
export function userEncoder<R>(
  encode: (result: StepResult<R>) => EncodedBodies,
): (result: StepResult<R>) => Uint8Array[] {
  return (result) => {
    const bodies = encode(result);
    if (bodies instanceof Uint8Array) return [sourceMessage(bodies)];
    if (Array.isArray(bodies) && bodies.length > 0 && bodies.every(isBytes)) {
      return bodies.map((body) => sourceMessage(body));
    }
    throw new TypeError(
      `encode must return a Uint8Array or a non-empty array of them, got ${describeValue(bodies)}`,
    );
  };
}

/** A user's encoder's one write per step, as the runner takes a step's writes. */
export function ownEncoding<R>(
  encode: (result: StepResult<R>) => Uint8Array[],
): (result: StepResult<R>) => Uint8Array[][] {
  return (result) => [encode(result)];
}

function isBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array;
}

function describeValue(value: unknown): string {
  if (Array.isArray(value)) {
    return value.length === 0 ? 'an empty array' : 'an array holding something else';
  }
  return value === null ? 'null' : typeof value;
}
