import { decodeJson } from '../codecs/canonical-json.js';
import { decodeCanonical } from '../codecs/canonical-msgpack.js';
import { decodeMessage } from '../codecs/amqp-message.js';
import { CodecError } from '../codecs/codec-error.js';
import type { Key } from '../common/keyed-output.js';
import {
  MultiSectionMessageError,
  ResultMessageError,
  type ProcessingStage,
} from '../common/errors.js';
import type { DeadLetter, RecoveryState } from './step-result.js';
import { readStepId } from './publishing-id.js';
import { readMergeRecord } from './merge-record-text.js';
import {
  PARTED_FORMAT_VERSION,
  RESULT_FORMAT_VERSION,
  ResultProperty,
  SECTIONS_CONTENT_TYPE,
  SingleContentType,
  type DecodedResult,
  type OpenCountSlices,
  type ResultOutput,
} from './result-format.js';

/*
 * A result message of the wire format (./result-format.ts) read back.
 */

/** The versions `decodeResult` reads: results already on targets stay readable. */
const READABLE_VERSIONS: readonly string[] = ['1', RESULT_FORMAT_VERSION, PARTED_FORMAT_VERSION];

/**
 * Reads a result message of the target stream: metadata and every section. Throws
 * CodecError when `bytes` is not a result of this format, naming what is wrong.
 */
export function decodeResult<R = unknown>(bytes: Uint8Array): DecodedResult<R> {
  const message = decodeMessage(bytes);
  const properties = resultProperties(message.applicationProperties);
  // A step of messages that left nothing (all skipped by a results source) has no section,
  // and an AMQP message without data sections has no body.
  if (message.body !== undefined && message.body.type !== 'data') {
    throw new CodecError('a result carries its sections in data sections', 0);
  }
  const { sections, binaryAsBase64 } = sectionsOf(
    message.body?.sections ?? [],
    message.properties?.contentType,
    properties,
  );

  const outputs: ResultOutput<R>[] = [];
  let late: unknown[] = [];
  let deadLetters: DeadLetter[] = [];
  for (const value of sections) {
    const section = new SectionFields(value, binaryAsBase64);
    const type = section.get('type');
    if (type === 'output') {
      outputs.push({
        key: section.key(),
        start: section.number('start'),
        end: section.number('end'),
        count: section.number('count'),
        value: section.get('value') as R,
        final: section.get('final') !== false,
        continues: section.get('continues') === true,
      });
    } else if (type === 'late') {
      late = section.array('values');
    } else if (type === 'dead-letters') {
      deadLetters = section.array('records').map((record) => {
        const fields = new SectionFields(record, binaryAsBase64);
        return {
          offset: parseOffset('dead letter offset', fields.get('offset')),
          stage: fields.get('stage') as ProcessingStage,
          error: String(fields.get('error')),
          message: fields.binary('message'),
        };
      });
    } else {
      throw new CodecError(`unknown result section type '${String(type)}'`, 0);
    }
  }
  return { ...readHeader(properties), outputs, late, deadLetters };
}

/**
 * Why `bytes` failed to decode as one plain value: when it is a result of this format (its
 * `sw-format` property), a ResultMessageError naming it and the way to read it; otherwise the
 * decoder's own `cause`. Looked at only on a failure, so the hot path pays nothing. One home
 * for jobs and database sinks, which read plain values the same way.
 */
export function decodeFailure(
  cause: unknown,
  bytes: Uint8Array,
  reader: 'job' | 'sink' = 'job',
): unknown {
  if (cause instanceof MultiSectionMessageError) return cause;
  let format: unknown;
  try {
    format = decodeMessage(bytes).applicationProperties?.[ResultProperty.format];
  } catch {
    return cause; // not even an AMQP message: the decoder's error says enough
  }
  return typeof format === 'string' ? new ResultMessageError(format, cause, reader) : cause;
}

/** What a result's properties alone tell: everything `decodeResult` gives but its sections. */
export type ResultHeader = Omit<DecodedResult, 'outputs' | 'late' | 'deadLetters'>;

/**
 * A stored result's header, from its application properties alone, its sections left
 * undecoded: what a restart needs (its recovery state, its window, whether it was flushed),
 * for which decoding every section of a result of 100,000 outputs took 349 ms. Throws
 * CodecError like `decodeResult` when `bytes` is not a result of this format.
 */
export function decodeResultHeader(bytes: Uint8Array): ResultHeader {
  return readHeader(resultProperties(decodeMessage(bytes).applicationProperties));
}

function readHeader(properties: ResultProperties): ResultHeader {
  const windowStart = properties.optional(ResultProperty.windowStart);
  const windowEnd = properties.optional(ResultProperty.windowEnd);
  const part = properties.optional(ResultProperty.part);
  const filtered = properties.optional(ResultProperty.filtered);
  const previous = properties.optional(ResultProperty.previous);
  const slices = readSlices(properties);
  return {
    source: properties.text(ResultProperty.source),
    producer: properties.text(ResultProperty.producer),
    window: properties.text(ResultProperty.window),
    definition: properties.optional(ResultProperty.job),
    firstOffset: properties.offset(ResultProperty.firstOffset),
    lastOffset: properties.offset(ResultProperty.lastOffset),
    windowStart:
      windowStart === undefined ? undefined : properties.integer(ResultProperty.windowStart),
    windowEnd: windowEnd === undefined ? undefined : properties.integer(ResultProperty.windowEnd),
    messages: properties.integer(ResultProperty.messages),
    outputCount: properties.integer(ResultProperty.outputs),
    lateCount: properties.integer(ResultProperty.late),
    lateDropped: properties.integer(ResultProperty.lateDropped),
    deadLetterCount: properties.integer(ResultProperty.deadLetters),
    filtered: filtered === undefined ? 0 : properties.integer(ResultProperty.filtered),
    part:
      part === undefined
        ? undefined
        : {
            index: properties.integer(ResultProperty.part),
            of: properties.integer(ResultProperty.parts),
          },
    previous: previous === undefined ? undefined : properties.offset(ResultProperty.previous),
    recovery: readRecovery(properties, slices !== undefined),
    ...(slices === undefined ? {} : { openCountSlices: slices }),
    flushed: properties.optional(ResultProperty.flushed) === 'true',
  };
}

/** `sw-open-counts-slices`, and the slice the message holds: its index is its write's. */
function readSlices(properties: ResultProperties): OpenCountSlices | undefined {
  if (properties.optional(ResultProperty.openCountSlices) === undefined) return undefined;
  const count = properties.integer(ResultProperty.openCountSlices);
  if (count < 1) {
    throw new CodecError(`result property '${ResultProperty.openCountSlices}' must be above 0`, 0);
  }
  const text = properties.optional(ResultProperty.openCounts);
  if (text === undefined) return { count };
  // Slice j is on write j; a step's last write, whatever its index, can only hold the last.
  const write = readStepId(properties.offset(ResultProperty.writeId));
  const index = write.kind !== 'write' ? -1 : write.last ? count - 1 : write.write;
  if (index < 0 || index >= count) {
    throw new CodecError(
      `a slice of '${ResultProperty.openCounts}' on a write that holds none of ${count}`,
      0,
    );
  }
  return { count, slice: { index, text } };
}

/**
 * The open counts a step wrote in slices, from their texts in order (`OpenCountSlices`).
 * Throws CodecError when they do not join into the property's JSON.
 */
export function joinOpenCountSlices(texts: readonly string[]): [Key, bigint, number?][] {
  return readOpenCounts(texts.join(''));
}

/** A stored result message's `sw-holds`: what it holds; undefined when it does not say. */
export function heldBy(bytes: Uint8Array): string | undefined {
  const holds = decodeMessage(bytes).applicationProperties?.[ResultProperty.holds];
  return typeof holds === 'string' ? holds : undefined;
}

/** A result's application properties, once its format version is checked. */
function resultProperties(properties: Record<string, unknown> | undefined): ResultProperties {
  const read = new ResultProperties(properties ?? {});
  const format = read.text(ResultProperty.format);
  if (!READABLE_VERSIONS.includes(format)) {
    throw new CodecError(`unsupported result format '${format}'`, 0);
  }
  return read;
}

/**
 * The recovery state of an event-time result; undefined for a step window's result. `sliced`:
 * its open counts are in slices (`readSlices`), left out here.
 */
function readRecovery(properties: ResultProperties, sliced: boolean): RecoveryState | undefined {
  if (properties.optional(ResultProperty.resumeOffset) === undefined) return undefined;
  const resumeWatermark = properties.optional(ResultProperty.resumeWatermark);
  // Sliced, the message holds at most a piece of the open counts: joined by its readers.
  const counts = sliced ? undefined : properties.optional(ResultProperty.openCounts);
  const lastFlush = properties.optional(ResultProperty.lastFlush);
  const watermark = properties.optional(ResultProperty.watermark);
  const merge = properties.optional(ResultProperty.merge);
  const offset = properties.offset(ResultProperty.resumeOffset);
  const state = {
    watermark:
      watermark === undefined
        ? Number.NEGATIVE_INFINITY
        : properties.integer(ResultProperty.watermark),
    offset,
    offsetWatermark:
      resumeWatermark === undefined
        ? Number.NEGATIVE_INFINITY
        : properties.integer(ResultProperty.resumeWatermark),
    ...(lastFlush === undefined ? {} : { lastFlush: properties.offset(ResultProperty.lastFlush) }),
    ...(merge === undefined ? {} : { merge: readMergeRecord(merge, offset) }),
  };
  if (counts === undefined) return state;
  return { ...state, openCounts: readOpenCounts(counts) };
}

function readOpenCounts(text: string): [Key, bigint, number?][] {
  const what = `result property '${ResultProperty.openCounts}'`;
  let entries: unknown;
  try {
    // The text itself: a round trip through bytes costs a restart as much again (26 MB for a
    // million open keys).
    entries = JSON.parse(text);
  } catch (error) {
    throw new CodecError(`${what}: invalid JSON: ${(error as Error).message}`, 0);
  }
  if (!Array.isArray(entries)) throw new CodecError(`${what} must be a JSON array`, 0);
  return entries.map((entry: unknown) => {
    if (!Array.isArray(entry) || (entry.length !== 2 && entry.length !== 3)) {
      throw new CodecError(`${what} must hold [key, offset] or [key, offset, skip] entries`, 0);
    }
    const [key, offset, skip] = entry as [unknown, unknown, unknown];
    if (key !== null && typeof key !== 'string' && typeof key !== 'number') {
      throw new CodecError(`${what}: a key must be a string, a number or null`, 0);
    }
    if (entry.length === 2) return [key, parseOffset(what, offset)];
    if (typeof skip !== 'number' || !Number.isSafeInteger(skip) || skip < 1) {
      throw new CodecError(`${what}: a skip must be a whole number above 0`, 0);
    }
    return [key, parseOffset(what, offset), skip];
  });
}

/**
 * The section values of a result, told apart by its content-type: one per data section
 * ('sections'), the one data section's map (a 'batch' part: `sw-part` set), or the elements of
 * the one data section's array ('single'; JSON carries binary as base64). Version '1' set a
 * content-type on 'single' results only.
 */
function sectionsOf(
  dataSections: readonly Uint8Array[],
  contentType: string | undefined,
  properties: ResultProperties,
): { sections: unknown[]; binaryAsBase64: boolean } {
  const legacy = properties.text(ResultProperty.format) === '1';
  if (legacy ? contentType === undefined : contentType === SECTIONS_CONTENT_TYPE) {
    // A sequence: an empty data section (a result without sections) holds no section.
    const present = dataSections.filter((bytes) => bytes.length > 0);
    return { sections: present.map((bytes) => decodeCanonical(bytes)), binaryAsBase64: false };
  }
  const json = contentType === SingleContentType.json;
  if (!json && contentType !== SingleContentType.msgpack) {
    throw new CodecError(`unknown result content-type '${String(contentType)}'`, 0);
  }
  const [only, ...more] = dataSections;
  if (only === undefined || more.length > 0) {
    throw new CodecError(
      `a '${contentType}' result has exactly one data section, got ${dataSections.length}`,
      0,
    );
  }
  const sections = json ? decodeJson(only) : decodeCanonical(only);
  // A 'batch' part holds one section, a map. A 'single' step's part (of a step of several
  // writes, so with `sw-write-id`) holds an array of sections, as a whole 'single' result does.
  const singlePart =
    Array.isArray(sections) && properties.optional(ResultProperty.writeId) !== undefined;
  if (!legacy && !json && properties.optional(ResultProperty.part) !== undefined && !singlePart) {
    return { sections: [sections], binaryAsBase64: false };
  }
  if (!Array.isArray(sections)) {
    throw new CodecError(`a '${contentType}' result's data section must be an array`, 0);
  }
  return { sections, binaryAsBase64: json };
}

/** The application properties of a result, read with the type each one must have. */
class ResultProperties {
  constructor(private readonly properties: Record<string, unknown>) {}

  text(name: string): string {
    const value = this.properties[name];
    if (typeof value !== 'string') {
      throw new CodecError(`result property '${name}' must be a string, got ${typeof value}`, 0);
    }
    return value;
  }

  optional(name: string): string | undefined {
    return this.properties[name] === undefined ? undefined : this.text(name);
  }

  integer(name: string): number {
    const value = Number(this.text(name));
    if (!Number.isSafeInteger(value)) {
      throw new CodecError(
        `result property '${name}' must be an integer, got '${this.text(name)}'`,
        0,
      );
    }
    return value;
  }

  offset(name: string): bigint {
    return parseOffset(`result property '${name}'`, this.text(name));
  }
}

/** The fields of one msgpack section (a map), read with the type each one must have. */
class SectionFields {
  private readonly fields: Record<string, unknown>;

  constructor(
    section: unknown,
    private readonly binaryAsBase64: boolean,
  ) {
    if (section === null || typeof section !== 'object' || Array.isArray(section)) {
      throw new CodecError('a result section must be a msgpack map', 0);
    }
    this.fields = section as Record<string, unknown>;
  }

  get(name: string): unknown {
    return this.fields[name];
  }

  key(): Key {
    const key = this.fields.key;
    if (key === null || typeof key === 'string' || typeof key === 'number') return key;
    throw new CodecError(`an output's key must be a string, a number or null`, 0);
  }

  number(name: string): number {
    const value = this.fields[name];
    if (typeof value !== 'number')
      throw new CodecError(`section field '${name}' must be a number`, 0);
    return value;
  }

  array(name: string): unknown[] {
    const value = this.fields[name];
    if (!Array.isArray(value)) throw new CodecError(`section field '${name}' must be an array`, 0);
    return value;
  }

  binary(name: string): Uint8Array {
    const value = this.fields[name];
    if (this.binaryAsBase64) {
      if (typeof value !== 'string' || !BASE64.test(value)) {
        throw new CodecError(`section field '${name}' must be a base64 string`, 0);
      }
      return new Uint8Array(Buffer.from(value, 'base64'));
    }
    if (!(value instanceof Uint8Array))
      throw new CodecError(`section field '${name}' must be binary`, 0);
    return value;
  }
}

/** Standard base64 with padding, as canonical JSON writes binary (Buffer would accept more). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function parseOffset(what: string, value: unknown): bigint {
  if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,19})$/.test(value)) {
    throw new CodecError(`${what} must be a decimal offset, got '${String(value)}'`, 0);
  }
  return BigInt(value);
}
