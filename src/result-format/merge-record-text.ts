import { encodeCanonicalJson } from '../codecs/canonical-json.js';
import { CodecError } from '../codecs/codec-error.js';
import type { InputFloor, InputRecord, MergeKey, MergeRecord } from './merge-record.js';
import { ResultProperty } from './result-format.js';

/*
 * A merge record as a result carries it: `sw-merge`, canonical JSON of arrays rather than named
 * fields, for it rides on every result of a job over several inputs (about 25 bytes an input):
 *
 *     {"after":[mergeTime, input, "offset"], "inputs":[["from", maxEventTime, floors?], ...]}
 *
 * `after` is left out at position 0, `floors` ([["offset", floor], ...]) when an input has none;
 * an event time of -Infinity (none yet) is null; offsets are decimal strings. The record's
 * position is the recovery state's offset (`sw-resume-offset`), not written twice.
 */

/** `sw-merge` of `record`. */
export function mergeRecordText(record: MergeRecord): string {
  const { after } = record;
  const inputs = record.inputs.map(({ from, maxEventTime, floors }) => {
    const input: unknown[] = [from, timeOrNull(maxEventTime)];
    if (floors.length > 0) input.push(floors.map(({ offset, floor }) => [offset, floor]));
    return input;
  });
  const value = {
    ...(after === undefined
      ? {}
      : { after: [timeOrNull(after.mergeTime), after.input, after.offset] }),
    inputs,
  };
  return Buffer.from(encodeCanonicalJson(value)).toString('utf8');
}

/** The merge record `text` (`sw-merge`) holds, at `position`; throws CodecError when malformed. */
export function readMergeRecord(text: string, position: bigint): MergeRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw malformed(`invalid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw malformed('must be a JSON object { after?, inputs }');
  }
  const { after, inputs } = parsed as { after?: unknown; inputs?: unknown };
  if (!Array.isArray(inputs) || inputs.length === 0) {
    throw malformed('inputs must be a non-empty array');
  }
  if (after === undefined && position !== 0n) {
    throw malformed(`after is missing at position ${position}`);
  }
  return {
    position,
    ...(after === undefined ? {} : { after: readKey(after, inputs.length) }),
    inputs: inputs.map(readInput),
  };
}

function readKey(value: unknown, inputs: number): MergeKey {
  if (!Array.isArray(value) || value.length !== 3) {
    throw malformed('after must be [mergeTime, input, offset]');
  }
  const [mergeTime, input, offset] = value as [unknown, unknown, unknown];
  if (typeof input !== 'number' || !Number.isInteger(input) || input < 0 || input >= inputs) {
    throw malformed(`after's input must be an index below ${inputs}`);
  }
  return {
    mergeTime: readTime(mergeTime, "after's merge time"),
    input,
    offset: readOffset(offset),
  };
}

function readInput(value: unknown): InputRecord {
  if (!Array.isArray(value) || value.length < 2 || value.length > 3) {
    throw malformed('an input must be [from, maxEventTime] or [from, maxEventTime, floors]');
  }
  const [from, maxEventTime, floors = []] = value as [unknown, unknown, unknown?];
  if (!Array.isArray(floors)) throw malformed("an input's floors must be an array");
  return {
    from: readOffset(from),
    maxEventTime: readTime(maxEventTime, "an input's latest event time"),
    floors: floors.map(readFloor),
  };
}

function readFloor(value: unknown): InputFloor {
  const [offset, floor] = Array.isArray(value) ? (value as unknown[]) : [];
  if (!Array.isArray(value) || value.length !== 2 || typeof floor !== 'number') {
    throw malformed('a floor must be [offset, floor]');
  }
  return { offset: readOffset(offset), floor };
}

function timeOrNull(time: number): number | null {
  return time === Number.NEGATIVE_INFINITY ? null : time;
}

function readTime(value: unknown, what: string): number {
  if (value === null) return Number.NEGATIVE_INFINITY;
  if (typeof value !== 'number') throw malformed(`${what} must be a number or null`);
  return value;
}

function readOffset(value: unknown): bigint {
  if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,19})$/.test(value)) {
    throw malformed(`an offset must be a decimal string, got '${String(value)}'`);
  }
  return BigInt(value);
}

function malformed(reason: string): CodecError {
  return new CodecError(`result property '${ResultProperty.merge}': ${reason}`, 0);
}
