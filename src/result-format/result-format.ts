import { decodeJson, encodeCanonicalJson } from '../codecs/canonical-json.js';
import { decodeCanonical } from '../codecs/canonical-msgpack.js';
import {
  CanonicalMsgpackWriter,
  preEncoded,
  type PreEncoded,
} from '../codecs/canonical-msgpack-writer.js';
import { decodeMessage, encodeMessage } from '../codecs/amqp-message.js';
import { CodecError } from '../codecs/codec-error.js';
import type { Key } from '../common/keyed-output.js';
import {
  MultiSectionMessageError,
  ResultMessageError,
  type ProcessingStage,
} from '../common/errors.js';
import type { DeadLetter, RecoveryState, StepResult } from './step-result.js';
import { batchRecordSize, batchSize, writeSize } from '../ports/write-size.js';
import { MAX_STEP_WRITES, readStepId, writeId } from './publishing-id.js';

/**
 * The wire format of results — part of the public API, documented in the README.
 *
 * A result is an AMQP 1.0 message. Its application properties (all strings, the type every
 * client reads safely) describe the step; its sections, each one canonical msgpack map, carry
 * the outputs in first-appearance order of their keys, then at most one late section, then at
 * most one dead-letter section. Every message names its body's shape in its content-type, and
 * what it holds in `sw-holds`, so a reader that is not ours can route on properties alone:
 * - `pack: 'single'` (the default): the sections are the elements of ONE array in ONE data
 *   section, canonical msgpack or canonical JSON: the one shape every client reads whole;
 * - `pack: 'sections'`: one data section per section, content-type `application/msgpack-seq`
 *   (AMQP 0-9-1 shows the sections run together: a msgpack sequence, not one value);
 * - `pack: 'batch'`: every section in its own message of one sub-entry batch, content-type
 *   `application/msgpack`, with the result's properties plus its part number, its section's
 *   type and, for an output, its key, window and finality.
 * Version '1' (no content-type but on 'single', no `sw-holds`) is still read.
 */
export type PackMode = 'sections' | 'batch' | 'single';

/** How `pack: 'single'` writes its one data section. */
export type SingleFormat = 'msgpack' | 'json';

/** The content-type of a `pack: 'single'` result (a `pack: 'batch'` part's is the msgpack one). */
export const SingleContentType = {
  msgpack: 'application/msgpack',
  json: 'application/json',
} as const satisfies Record<SingleFormat, string>;

/**
 * The content-type of a `pack: 'sections'` result: several msgpack maps, one per data section,
 * which AMQP 0-9-1 delivers run together. Named after `application/cbor-seq` (RFC 8742) and
 * `application/json-seq` (RFC 7464): a reader that expects one msgpack value does not take it
 * for `application/msgpack`, and one that knows the name decodes a sequence.
 */
export const SECTIONS_CONTENT_TYPE = 'application/msgpack-seq';

/**
 * Version of this format, in the `sw-format` property. Version '2' added the content-type of
 * every packing and `sw-holds` (and the batch parts' routing properties); a reader of version
 * '1' refuses it as an unsupported format instead of taking a batch part for a 'single' result.
 */
export const RESULT_FORMAT_VERSION = '2';

/**
 * The version of a message of a step that spans several writes: a reader of version '2' would
 * take such a part for a whole result, so it is refused there by its version instead. A step of
 * one write keeps version '2' and its bytes.
 */
export const PARTED_FORMAT_VERSION = '3';

/** The versions `decodeResult` reads: results already on targets stay readable. */
const READABLE_VERSIONS: readonly string[] = ['1', RESULT_FORMAT_VERSION, PARTED_FORMAT_VERSION];

/** `sw-holds` of a result without any section (a flush of filtered messages only). */
const HOLDS_NOTHING = 'none';

/** The names of the application properties every result carries (`sw-format`, `sw-source`, …). */
export const ResultProperty = {
  format: 'sw-format',
  source: 'sw-source',
  producer: 'sw-producer',
  window: 'sw-window',
  /**
   * The job's definition (see job-definition.ts), canonical JSON; absent on results written
   * before version 1 of the format had it, and on those of `encodeResult` given none.
   */
  job: 'sw-job',
  firstOffset: 'sw-first-offset',
  lastOffset: 'sw-last-offset',
  windowStart: 'sw-window-start',
  windowEnd: 'sw-window-end',
  messages: 'sw-messages',
  outputs: 'sw-outputs',
  late: 'sw-late',
  lateDropped: 'sw-late-dropped',
  deadLetters: 'sw-dead-letters',
  /** Written only when above 0, so results of jobs without `.filter()` keep their bytes. */
  filtered: 'sw-filtered',
  /** This message's index among the step's messages, and their count (see `encodeStep`). */
  part: 'sw-part',
  parts: 'sw-parts',
  /**
   * A step written in several writes: the publishing id of the producer's write before the
   * step (./publishing-id.ts), where a restart that finds the step not whole goes back to.
   */
  previous: 'sw-previous',
  /** A step written in several writes: the publishing id of the write holding this message. */
  writeId: 'sw-write-id',
  /**
   * What the message holds: a batch part's section type; for a whole result, the types of its
   * sections in their order, each once, joined by ',' (e.g. 'output,late'); 'none' for none.
   */
  holds: 'sw-holds',
  // A batch part holding an output only: what a consumer routes on without decoding the body.
  /** The key as text (a number in decimal); absent for the null key and the empty string. */
  key: 'sw-key',
  /** 'string', 'number' or 'null': what `sw-key` was. */
  keyType: 'sw-key-type',
  outputStart: 'sw-output-start',
  outputEnd: 'sw-output-end',
  /** 'false' for an early update of a window still open, 'true' for its final output. */
  final: 'sw-final',
  /** 'true' on an output continuing a window a flush published before; absent otherwise. */
  continues: 'sw-continues',
  // Event-time windows only (see RecoveryState): what a restart from this result needs.
  /** Absent when no event time was read yet (a flush of filtered messages only). */
  watermark: 'sw-watermark',
  resumeOffset: 'sw-resume-offset',
  /** Absent when no message came before the resume offset (the watermark was -Infinity). */
  resumeWatermark: 'sw-resume-watermark',
  /**
   * Count windows per key: canonical JSON [[key, "first offset"], ...] of the open windows; in
   * a step of several writes, one slice of that text (see `openCountSlices`).
   */
  openCounts: 'sw-open-counts',
  /**
   * A step of several writes with per-key count windows: on every message, into how many
   * slices its `sw-open-counts` text was cut, slice j on the first message of write j.
   */
  openCountSlices: 'sw-open-counts-slices',
  /** 'true' on a result a flush published before its windows ended (`FlushOptions`). */
  flushed: 'sw-flushed',
  /** Event-time windows: the offset of the last flush, when a restart must repeat it. */
  lastFlush: 'sw-last-flush',
} as const;

/** A result's properties, decoded: where it came from, its window and its offsets. */
export interface ResultMetadata {
  /** The source stream the step read (`sw-source`). */
  readonly source: string;
  /** The producer name it was published under (`sw-producer`). */
  readonly producer: string;
  /** The window's description, e.g. "tumbling(1m)". */
  readonly window: string;
  /**
   * The job's definition (`sw-job`, see `jobDefinition`): what a restart checks its producer's
   * last result against. Undefined on a result written without one (an earlier version).
   */
  readonly definition?: string | undefined;
}

/** One logical output: a key's aggregate over the step's window. */
export interface ResultOutput<R = unknown> {
  /** The key, `null` when the job has no key function. */
  readonly key: Key;
  /** The output's window start, epoch ms (inclusive). */
  readonly start: number;
  /** The output's window end, epoch ms (exclusive). */
  readonly end: number;
  /** How many values the key absorbed in the window. */
  readonly count: number;
  /** The aggregate, as the job's aggregator's `result` returned it. */
  readonly value: R;
  /**
   * false for an early update of an event-time window still open (the job's `.emit()`): a
   * later result carries the window again. true for a window's final output.
   */
  readonly final: boolean;
  /**
   * true when a flush (`FlushOptions`) published this window before, and this output holds
   * what came after: the two together are the window.
   */
  readonly continues: boolean;
}

/** A result message as a consumer of the target stream reads it with `decodeResult`. */
export interface DecodedResult<R = unknown> extends ResultMetadata {
  /** The first source offset of the step. */
  readonly firstOffset: bigint;
  /** The last source offset of the step: the result's publishing id. */
  readonly lastOffset: bigint;
  /**
   * The step's window start, epoch ms (for event-time windows: the earliest output's);
   * undefined when the result has no window (every message dead-lettered, say).
   */
  readonly windowStart: number | undefined;
  /** The step's window end, epoch ms, exclusive (event-time windows: the latest output's). */
  readonly windowEnd: number | undefined;
  /** Source messages in `firstOffset..lastOffset`. */
  readonly messages: number;
  /** Outputs of the whole step: with 'batch' packing, `outputs` below holds this message's part. */
  readonly outputCount: number;
  /** Late values the 'side' policy kept in the step's result. */
  readonly lateCount: number;
  /** Late messages the 'drop' policy counted and discarded. */
  readonly lateDropped: number;
  /** Dead letters of the step (under `.onError('dead-letter')`). */
  readonly deadLetterCount: number;
  /** Messages a `.filter()` left out (0 when the property is absent). */
  readonly filtered: number;
  /**
   * This message's index among the step's messages, and their number: with 'batch' packing,
   * and with any packing when the step took several writes; undefined for a step of one message.
   */
  readonly part: { readonly index: number; readonly of: number } | undefined;
  /**
   * A step of several writes: the publishing id of its producer's write before the step
   * (`sw-previous`); undefined otherwise, and when the producer wrote nothing before it.
   */
  readonly previous: bigint | undefined;
  /** The outputs this message holds, in first-appearance order of their keys. */
  readonly outputs: readonly ResultOutput<R>[];
  /** The late values this message holds (the 'side' policy), in offset order. */
  readonly late: readonly unknown[];
  /** The dead letters this message holds, in offset order. */
  readonly deadLetters: readonly DeadLetter[];
  /**
   * Event-time windows only: the watermark after this result, and where a restart resumes. On
   * a message of a step whose open counts were written in slices (`openCountSlices`), without
   * `openCounts`: `readResults` joins the step's slices into it.
   */
  readonly recovery: RecoveryState | undefined;
  /**
   * A step of several writes with per-key count windows (`sw-open-counts-slices`): its open
   * counts are written once, their canonical JSON text cut into `count` slices, slice j on the
   * first message of write j. `slice`: the one this message holds, if any (its text is a piece
   * of the JSON, readable only joined with the others, in order). Absent otherwise.
   */
  readonly openCountSlices?: OpenCountSlices;
  /** Published by a flush before its windows ended (`FlushOptions`). */
  readonly flushed: boolean;
}

/** A step's open counts written in slices: how many, and the one a message holds. */
export interface OpenCountSlices {
  /** How many slices the step's open counts were cut into (`sw-open-counts-slices`). */
  readonly count: number;
  /** The slice this message holds, when it holds one: its index and its text. */
  readonly slice?: { readonly index: number; readonly text: string };
}

/**
 * Encodes a step's result as the messages of ONE write (one message, or one batch), however
 * large: `encodeStep` splits what does not fit. `format` applies to `pack: 'single'` only.
 */
export function encodeResult<R>(
  result: StepResult<R>,
  metadata: ResultMetadata,
  pack: PackMode,
  format: SingleFormat = 'msgpack',
): Uint8Array[] {
  return encodeMessages(sectionValues(result), stepProperties(result, metadata), pack, format);
}

/**
 * Encodes a step's result as its writes, in order: ONE write, the messages `encodeResult`
 * gives, when they fit `maxWriteBytes`; otherwise as many as it takes (see
 * ./publishing-id.ts for their ids). Then every message is a part of the step: `sw-part` and
 * `sw-parts` number the step's messages across its writes, `sw-previous` names the id of the
 * step's write before (absent when none), and each message holds some of the step's sections
 * in their order (a 'late' or 'dead-letters' section cut into several when it alone is too
 * large). 'batch' keeps one message per section, several per write; 'single' and 'sections'
 * write one message per write. Per-key count windows' open counts, which one write carries on
 * every message, are then written once, whatever their size: their text cut into slices of
 * at most a write, slice j on the first message of write j, each write's sections after it
 * as they fit, and every message says how many slices there are (`sw-open-counts-slices`);
 * writes holding a slice and no section hold 'none'. Deterministic: the same step and limit
 * give the same bytes. A write still over the limit holds one section too large for any
 * write (the caller's error).
 */
export function encodeStep<R>(
  result: StepResult<R>,
  metadata: ResultMetadata,
  pack: PackMode,
  format: SingleFormat,
  maxWriteBytes: number,
  previous: bigint,
): Uint8Array[][] {
  const values = sectionValues(result);
  const properties = stepProperties(result, metadata);
  // Each section's bytes, measured once: they decide whether the step can fit one write, and
  // how it is cut when it cannot.
  const measured = new Map<SectionValue, number>();
  const json = pack === 'single' && format === 'json';
  const bytesOf = (value: SectionValue): number => {
    let bytes = measured.get(value);
    if (bytes === undefined) {
      bytes = (json ? encodeCanonicalJson(value) : encodeSection(value)).length;
      measured.set(value, bytes);
    }
    return bytes;
  };
  // A message is larger than its sections' bytes and its open counts' text (on every message,
  // 'batch': every part): over the limit by those alone, the step cannot fit one write.
  const counts = properties[ResultProperty.openCounts];
  const copies = pack === 'batch' ? Math.max(1, values.length) : 1;
  let sectionBytes = counts === undefined ? 0 : counts.length * copies;
  for (const value of values) {
    if (sectionBytes > maxWriteBytes) break;
    sectionBytes += bytesOf(value);
  }
  if (sectionBytes <= maxWriteBytes) {
    const whole = encodeMessages(values, properties, pack, format);
    if (writeSize(whole) <= maxWriteBytes) return [whole];
  }
  const parted: Record<string, string> = {
    ...properties,
    [ResultProperty.format]: PARTED_FORMAT_VERSION,
    ...(previous === 0n ? {} : { [ResultProperty.previous]: String(previous) }),
  };
  // The open counts, if any, leave every message: each write j < slices carries slice j.
  const shared = (slices: number): Record<string, string> =>
    counts === undefined ? parted : withSliceCount(parted, slices);
  const withWriteId = (
    write: number,
    writes: number,
    slices: number,
    slice?: string,
  ): Record<string, string> => ({
    ...shared(slices),
    [ResultProperty.writeId]: String(writeId(result.lastOffset, write, writes)),
    ...(slice === undefined ? {} : { [ResultProperty.openCounts]: slice }),
  });
  // Sized with stand-ins as long as every value they stand for: ids (every id of the scheme
  // has as many digits), part numbers and the slice count.
  const standIn = (): Record<string, string> => withWriteId(0, 2, MAX_STEP_WRITES);
  const contentType = pack === 'sections' ? SECTIONS_CONTENT_TYPE : SingleContentType[format];
  const header = encodeMessage({
    properties: { contentType },
    applicationProperties: {
      ...standIn(),
      [ResultProperty.part]: String(MAX_PARTS),
      [ResultProperty.parts]: String(MAX_PARTS),
      [ResultProperty.holds]: 'output,late,dead-letters',
    },
    body: { type: 'data', sections: [new Uint8Array(0)] },
  }).length;
  const budget = maxWriteBytes - header - SECTION_OVERHEAD;
  const costOf = (value: SectionValue): number => bytesOf(value) + SECTION_OVERHEAD;
  const cut = values.flatMap((value) => cutToFit(value, budget, costOf));
  if (pack === 'batch') return batchWrites(cut, counts, maxWriteBytes, standIn, withWriteId);
  const slices = counts === undefined ? [] : cutText(counts, budget - SLICE_OVERHEAD);
  const groups = groupSections(
    cut,
    budget,
    slices.map((slice) => budget - slice.bytes - SLICE_OVERHEAD),
    costOf,
  );
  return groups.map((group, index) => {
    const body =
      pack === 'sections'
        ? group.length === 0
          ? [new Uint8Array(0)] // an empty sequence, as a step without sections writes
          : group.map((value) => encodeSection(value))
        : [json ? encodeCanonicalJson(group) : encodeSections(group)];
    return [
      encodeMessage({
        properties: { contentType },
        applicationProperties: {
          ...withWriteId(index, groups.length, slices.length, slices[index]?.text),
          [ResultProperty.part]: String(index),
          [ResultProperty.parts]: String(groups.length),
          [ResultProperty.holds]: holdsOf(group),
        },
        body: { type: 'data', sections: body },
      }),
    ];
  });
}

/** The longest `sw-part`/`sw-parts` a step's message can carry (a 'batch' part per section). */
const MAX_PARTS = Number.MAX_SAFE_INTEGER;

/**
 * `properties` with `sw-open-counts` replaced, in its place, by `sw-open-counts-slices`: what
 * every message of a step whose open counts are written in slices carries.
 */
function withSliceCount(
  properties: Record<string, string>,
  slices: number,
): Record<string, string> {
  const replaced: Record<string, string> = {};
  for (const [name, value] of Object.entries(properties)) {
    const counts = name === ResultProperty.openCounts;
    replaced[counts ? ResultProperty.openCountSlices : name] = counts ? String(slices) : value;
  }
  return replaced;
}

/**
 * What a slice costs a message beyond its text's bytes, at most: the property's name (16),
 * its value's type and length (5), and the property map grown from 8-bit to 32-bit sizes (6).
 */
const SLICE_OVERHEAD = 32;

/** One slice of the open counts' text, and its UTF-8 bytes. */
interface TextSlice {
  readonly text: string;
  readonly bytes: number;
}

/**
 * `text` cut into consecutive slices of at most `size` UTF-8 bytes each (4 at least: one
 * character), never inside a character, so that each slice is a string and they join back.
 */
function cutText(text: string, size: number): TextSlice[] {
  const bytes = new TextEncoder().encode(text);
  const most = Math.max(4, size);
  const slices: TextSlice[] = [];
  for (let start = 0; start < bytes.length;) {
    let end = Math.min(bytes.length, start + most);
    // A UTF-8 continuation byte (10xxxxxx) is inside a character: cut before it begins.
    while (end < bytes.length && ((bytes[end] as number) & 0xc0) === 0x80) end--;
    slices.push({ text: TEXT_DECODER.decode(bytes.subarray(start, end)), bytes: end - start });
    start = end;
  }
  return slices;
}

const TEXT_DECODER = new TextDecoder();

/**
 * A 'batch' step's writes: consecutive parts (one section each) per write, as many as fit; a
 * write j below the slices' count carries slice j on its first message, which is a message
 * holding 'none' when its first part does not fit with the slice (or no part is left).
 */
function batchWrites(
  values: readonly SectionValue[],
  counts: string | undefined,
  maxWriteBytes: number,
  standIn: () => Record<string, string>,
  withWriteId: (
    write: number,
    writes: number,
    slices: number,
    slice?: string,
  ) => Record<string, string>,
): Uint8Array[][] {
  const partCount = values.length;
  const none = (properties: Record<string, string>, part: number, count: number): Uint8Array =>
    encodeMessage({
      properties: { contentType: SECTIONS_CONTENT_TYPE },
      applicationProperties: {
        ...properties,
        [ResultProperty.part]: String(part),
        [ResultProperty.parts]: String(count),
        [ResultProperty.holds]: HOLDS_NOTHING,
      },
      body: { type: 'data', sections: [new Uint8Array(0)] },
    });
  const properties = standIn();
  const slices =
    counts === undefined
      ? []
      : cutText(
          counts,
          maxWriteBytes -
            none(properties, MAX_STEP_WRITES, MAX_STEP_WRITES).length -
            SLICE_OVERHEAD,
        );
  // Sized with every 'none' message the slices may add before a part: its number and the
  // count may be that much larger (without slices, exactly as written).
  const extra = slices.length;
  const sized = values.map((value, part) =>
    batchPart(value, properties, part + extra, partCount + extra),
  );
  /** Each write: its parts' indexes, -1 for a message holding 'none'. */
  const plan: number[][] = [];
  let next = 0;
  while (next < partCount || plan.length < slices.length) {
    const slice = slices[plan.length];
    const sliceBytes = slice === undefined ? 0 : slice.bytes + SLICE_OVERHEAD;
    const write: number[] = [];
    const messages: Uint8Array[] = [];
    const first = sized[next];
    if (first === undefined || (slice !== undefined && first.length + sliceBytes > maxWriteBytes)) {
      write.push(-1);
      messages.push(none(properties, MAX_STEP_WRITES, MAX_STEP_WRITES));
    }
    // `writeSize` of the messages so far, as a running sum of their records.
    let records = messages.reduce((sum, message) => sum + batchRecordSize(message.length), 0);
    for (let part = sized[next]; part !== undefined; part = sized[next]) {
      records += batchRecordSize(part.length);
      const size = messages.length === 0 ? part.length : batchSize(records);
      if (messages.length > 0 && size + sliceBytes > maxWriteBytes) break;
      write.push(next++);
      messages.push(part);
    }
    plan.push(write);
  }
  const messageCount = plan.reduce((sum, write) => sum + write.length, 0);
  let index = 0;
  return plan.map((write, at) =>
    write.map((part, position) => {
      const slice = position === 0 ? slices[at]?.text : undefined;
      const properties = withWriteId(at, plan.length, slices.length, slice);
      const message =
        part === -1
          ? none(properties, index, messageCount)
          : batchPart(values[part] as SectionValue, properties, index, messageCount);
      index++;
      return message;
    }),
  );
}

/**
 * What a section costs a message beyond its own bytes, at most: a data section's descriptor
 * and size (8), or an array element's share of 'single''s array header, or a JSON comma.
 */
const SECTION_OVERHEAD = 8;

/** The step's messages, `pack`ed, all with `properties`. */
function encodeMessages(
  values: readonly SectionValue[],
  properties: Record<string, string>,
  pack: PackMode,
  format: SingleFormat,
): Uint8Array[] {
  if (pack === 'single') {
    const section = format === 'json' ? encodeCanonicalJson(values) : encodeSections(values);
    return [
      encodeMessage({
        properties: { contentType: SingleContentType[format] },
        applicationProperties: { ...properties, [ResultProperty.holds]: holdsOf(values) },
        body: { type: 'data', sections: [section] },
      }),
    ];
  }
  // A result without sections (a flush of nothing but filtered or dropped late messages) is
  // one message whose one data section is empty, an empty sequence: a batch must hold one
  // message, and RabbitMQ 4.0.5 cannot hand a message without a body to AMQP 1.0 readers.
  if (pack === 'sections' || values.length === 0) {
    const sections = values.map((value) => encodeSection(value));
    return [
      encodeMessage({
        properties: { contentType: SECTIONS_CONTENT_TYPE },
        applicationProperties: { ...properties, [ResultProperty.holds]: holdsOf(values) },
        body: { type: 'data', sections: sections.length === 0 ? [new Uint8Array(0)] : sections },
      }),
    ];
  }
  // One part alone is written as a plain message by the target, with the same properties.
  return values.map((value, part) => batchPart(value, properties, part, values.length));
}

/** A 'batch' step's message `part` of `count`: one section, and what routes it. */
function batchPart(
  value: SectionValue,
  properties: Record<string, string>,
  part: number,
  count: number,
): Uint8Array {
  return encodeMessage({
    properties: { contentType: SingleContentType.msgpack },
    applicationProperties: {
      ...properties,
      [ResultProperty.part]: String(part),
      [ResultProperty.parts]: String(count),
      ...partProperties(value),
    },
    body: { type: 'data', sections: [encodeSection(value)] },
  });
}

/** The properties of every message of the step. */
function stepProperties<R>(
  result: StepResult<R>,
  metadata: ResultMetadata,
): Record<string, string> {
  return {
    [ResultProperty.format]: RESULT_FORMAT_VERSION,
    [ResultProperty.source]: metadata.source,
    [ResultProperty.producer]: metadata.producer,
    [ResultProperty.window]: metadata.window,
    ...(metadata.definition === undefined ? {} : { [ResultProperty.job]: metadata.definition }),
    [ResultProperty.firstOffset]: result.firstOffset.toString(),
    [ResultProperty.lastOffset]: result.lastOffset.toString(),
    ...(result.window === null
      ? {}
      : {
          [ResultProperty.windowStart]: String(result.window.start),
          [ResultProperty.windowEnd]: String(result.window.end),
        }),
    [ResultProperty.messages]: String(result.messages),
    [ResultProperty.outputs]: String(result.outputs.length),
    [ResultProperty.late]: String(result.late.length),
    [ResultProperty.lateDropped]: String(result.lateDropped),
    [ResultProperty.deadLetters]: String(result.deadLetters.length),
    ...(result.filtered > 0 ? { [ResultProperty.filtered]: String(result.filtered) } : {}),
    ...(result.recovery === undefined ? {} : recoveryProperties(result.recovery)),
    ...(result.flushed === true ? { [ResultProperty.flushed]: 'true' } : {}),
  };
}

/**
 * The sections in consecutive groups each costing at most `budget` by `sizeOf`, or, for group
 * j below `reduced.length`, `reduced[j]` (what a write holding a slice of the open counts has
 * left); the sections are cut to fit (`cutToFit`) before. A group of `budget` holds one section at least, so a section still over it (one
 * output) makes its own group; a group of a reduced budget may hold none, and there are
 * `reduced.length` groups at least.
 */
function groupSections(
  values: readonly SectionValue[],
  budget: number,
  reduced: readonly number[],
  sizeOf: (value: SectionValue) => number,
): SectionValue[][] {
  const groups: SectionValue[][] = [];
  let group: SectionValue[] = [];
  let size = 0;
  const budgetOf = (index: number): number => reduced[index] ?? budget;
  for (const value of values) {
    const cost = sizeOf(value);
    // A message holds at most one 'late' and one 'dead-letters' section (the wire format):
    // the next piece of a cut section starts a group, even when both would fit one.
    const sameCut = value.type !== 'output' && group.at(-1)?.type === value.type;
    while (
      (size + cost > budgetOf(groups.length) || (sameCut && group.length > 0)) &&
      (group.length > 0 || groups.length < reduced.length)
    ) {
      groups.push(group);
      group = [];
      size = 0;
    }
    group.push(value);
    size += cost;
  }
  if (group.length > 0) groups.push(group);
  while (groups.length < reduced.length) groups.push([]);
  return groups;
}

/** A 'late' or 'dead-letters' section over `budget`, cut into sections of its kind under it. */
function cutToFit(
  value: SectionValue,
  budget: number,
  sizeOf: (value: SectionValue) => number,
): SectionValue[] {
  if (value.type === 'output' || sizeOf(value) <= budget) return [value];
  const items: readonly unknown[] = value.type === 'late' ? value.values : value.records;
  const sectionOf = (slice: readonly unknown[]): SectionValue =>
    value.type === 'late'
      ? { type: 'late', values: slice }
      : { type: 'dead-letters', records: slice as typeof value.records };
  const empty = sizeOf(sectionOf([]));
  const pieces: SectionValue[] = [];
  let slice: unknown[] = [];
  let size = empty;
  for (const item of items) {
    // An item's share: what it adds to a section of its own (its bytes and array slot).
    const cost = sizeOf(sectionOf([item])) - empty + 1;
    if (slice.length > 0 && size + cost > budget) {
      pieces.push(sectionOf(slice));
      slice = [];
      size = empty;
    }
    slice.push(item);
    size += cost;
  }
  if (slice.length > 0) pieces.push(sectionOf(slice));
  return pieces;
}

/** `sw-holds` of a whole result: its section types in order, each once. */
function holdsOf(values: readonly SectionValue[]): string {
  const types = [...new Set(values.map((value) => value.type))];
  return types.length === 0 ? HOLDS_NOTHING : types.join(',');
}

/** A batch part's own properties: its section type and, for an output, what routes it. */
function partProperties(value: SectionValue): Record<string, string> {
  if (value.type !== 'output') return { [ResultProperty.holds]: value.type };
  const { key } = value;
  return {
    [ResultProperty.holds]: value.type,
    // The stock JS client cannot read an empty string property back (it takes it for null).
    ...(key === null || key === '' ? {} : { [ResultProperty.key]: String(key) }),
    [ResultProperty.keyType]: key === null ? 'null' : typeof key,
    ...(value.start === null ? {} : { [ResultProperty.outputStart]: String(value.start) }),
    ...(value.end === null ? {} : { [ResultProperty.outputEnd]: String(value.end) }),
    [ResultProperty.final]: String(value.final !== false),
    ...(value.continues === true ? { [ResultProperty.continues]: 'true' } : {}),
  };
}

function recoveryProperties(state: RecoveryState): Record<string, string> {
  // A watermark of -Infinity (no event time read yet, before a flush) is left out.
  const properties: Record<string, string> = {
    ...(state.watermark === Number.NEGATIVE_INFINITY
      ? {}
      : { [ResultProperty.watermark]: String(state.watermark) }),
    [ResultProperty.resumeOffset]: state.offset.toString(),
  };
  if (state.offsetWatermark !== Number.NEGATIVE_INFINITY) {
    properties[ResultProperty.resumeWatermark] = String(state.offsetWatermark);
  }
  if (state.lastFlush !== undefined) {
    properties[ResultProperty.lastFlush] = state.lastFlush.toString();
  }
  if (state.openCounts !== undefined) {
    properties[ResultProperty.openCounts] = openCountsText(state.openCounts);
  }
  return properties;
}

/**
 * `sw-open-counts`: the text `encodeCanonicalJson` writes for [[key, "offset"(, skip)], ...]
 * (strings as JSON.stringify writes them, numbers finite), built directly: through the
 * generic writer a million open keys took seconds, most of them collecting its garbage.
 */
function openCountsText(openCounts: NonNullable<RecoveryState['openCounts']>): string {
  const entries = new Array<string>(openCounts.length);
  for (let i = 0; i < openCounts.length; i++) {
    const [key, offset, skip] = openCounts[i] as (typeof openCounts)[number];
    const text = typeof key === 'number' ? jsonNumber(key) : JSON.stringify(key);
    entries[i] =
      skip === undefined ? `[${text},"${offset}"]` : `[${text},"${offset}",${jsonNumber(skip)}]`;
  }
  return `[${entries.join(',')}]`;
}

/** A number as canonical JSON writes it; NaN and ±Infinity refused as it refuses them. */
function jsonNumber(value: number): string {
  if (!Number.isFinite(value)) throw new CodecError(`cannot encode ${value} as JSON`, 0);
  return JSON.stringify(value);
}

/** One section as written: the map of a data section, or an element of 'single''s array. */
type SectionValue =
  | {
      readonly type: 'output';
      readonly key: Key;
      readonly start: number | null;
      readonly end: number | null;
      readonly count: number;
      readonly value: unknown;
      readonly final?: false;
      readonly continues?: true;
    }
  | { readonly type: 'late'; readonly values: readonly unknown[] }
  | {
      readonly type: 'dead-letters';
      readonly records: readonly {
        readonly offset: string;
        readonly stage: ProcessingStage;
        readonly error: string;
        readonly message: Uint8Array;
      }[];
    };

/** The result's sections as values: each a data section, or an element of 'single''s array. */
function sectionValues<R>(result: StepResult<R>): SectionValue[] {
  const sections: SectionValue[] = [];
  const { window } = result;
  for (const output of result.outputs) {
    sections.push({
      type: 'output',
      key: output.key,
      start: output.start ?? window?.start ?? null,
      end: output.end ?? window?.end ?? null,
      count: output.count,
      value: output.value,
      // Written only for early updates and continuations, so that other outputs keep their bytes.
      ...(output.final === false ? { final: false } : {}),
      ...(output.continues === true ? { continues: true } : {}),
    });
  }
  if (result.late.length > 0) sections.push({ type: 'late', values: result.late });
  if (result.deadLetters.length > 0) {
    sections.push({
      type: 'dead-letters',
      records: result.deadLetters.map((letter) => ({
        offset: letter.offset.toString(),
        stage: letter.stage,
        error: letter.error,
        message: letter.message,
      })),
    });
  }
  return sections;
}

/** One writer for the process: results are encoded one at a time, synchronously. */
const writer = new CanonicalMsgpackWriter();

/** An output section's keys, in canonical (sorted) order. */
const OutputKey = {
  continues: preEncoded('continues'),
  count: preEncoded('count'),
  end: preEncoded('end'),
  final: preEncoded('final'),
  key: preEncoded('key'),
  start: preEncoded('start'),
  type: preEncoded('type'),
  value: preEncoded('value'),
} as const satisfies Record<string, PreEncoded>;
const OUTPUT_TYPE = preEncoded('output');

/** `encodeCanonical(values)`: 'single''s array of every section. */
function encodeSections(values: readonly SectionValue[]): Uint8Array {
  writer.start();
  writer.arrayHeader(values.length);
  for (const value of values) writeSection(value, 2);
  return writer.finish();
}

/** `encodeCanonical(value)`: one section as its own data section or batch part. */
function encodeSection(value: SectionValue): Uint8Array {
  writer.start();
  writeSection(value, 1);
  return writer.finish();
}

/**
 * A section at `depth`: an output's map with its keys in canonical order, those whose value
 * is undefined left out as the canonical encoder leaves them; the other sections as they are.
 */
function writeSection(section: SectionValue, depth: number): void {
  if (section.type !== 'output') {
    writer.value(section, depth);
    return;
  }
  const { final, continues, value } = section;
  writer.mapHeader(
    5 +
      (final === undefined ? 0 : 1) +
      (continues === undefined ? 0 : 1) +
      (value === undefined ? 0 : 1),
  );
  if (continues !== undefined) {
    writer.preEncoded(OutputKey.continues);
    writer.value(continues, depth + 1);
  }
  writer.preEncoded(OutputKey.count);
  writer.value(section.count, depth + 1);
  writer.preEncoded(OutputKey.end);
  writer.value(section.end, depth + 1);
  if (final !== undefined) {
    writer.preEncoded(OutputKey.final);
    writer.value(final, depth + 1);
  }
  writer.preEncoded(OutputKey.key);
  writer.value(section.key, depth + 1);
  writer.preEncoded(OutputKey.start);
  writer.value(section.start, depth + 1);
  writer.preEncoded(OutputKey.type);
  writer.preEncoded(OUTPUT_TYPE);
  if (value !== undefined) {
    writer.preEncoded(OutputKey.value);
    writer.value(value, depth + 1);
  }
}

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
  const state = {
    watermark:
      watermark === undefined
        ? Number.NEGATIVE_INFINITY
        : properties.integer(ResultProperty.watermark),
    offset: properties.offset(ResultProperty.resumeOffset),
    offsetWatermark:
      resumeWatermark === undefined
        ? Number.NEGATIVE_INFINITY
        : properties.integer(ResultProperty.resumeWatermark),
    ...(lastFlush === undefined ? {} : { lastFlush: properties.offset(ResultProperty.lastFlush) }),
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
