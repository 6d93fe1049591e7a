import { encodeCanonicalJson } from '../codecs/canonical-json.js';
import { encodeMessage } from '../codecs/amqp-message.js';
import type { StepResult } from './step-result.js';
import { batchRecordSize, batchSize, writeSize } from '../ports/write-size.js';
import { MAX_STEP_WRITES, writeId } from './publishing-id.js';
import {
  HOLDS_NOTHING,
  PARTED_FORMAT_VERSION,
  ResultProperty,
  SECTIONS_CONTENT_TYPE,
  SingleContentType,
  type PackMode,
  type ResultMetadata,
  type SingleFormat,
} from './result-format.js';
import {
  batchPart,
  encodeMessages,
  encodeSection,
  encodeSections,
  encodeSingleWithin,
  encodedSectionSize,
  holdsOf,
  sectionValues,
  stepProperties,
  type SectionValue,
} from './result-encoder.js';

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
  const properties = stepProperties(result, metadata);
  // A message is larger than its sections' bytes and its open counts' text (on every message,
  // 'batch': every part): over the limit by those alone, the step cannot fit one write.
  const counts = properties[ResultProperty.openCounts];
  const countBytes = counts === undefined ? 0 : counts.length;
  const json = pack === 'single' && format === 'json';
  if (pack === 'single' && !json) {
    // Written once, straight from the result, and given up as soon as it cannot fit.
    const whole = encodeSingleWithin(result, properties, maxWriteBytes - countBytes);
    if (whole !== undefined && writeSize([whole]) <= maxWriteBytes) return [[whole]];
  }
  const values = sectionValues(result);
  // Each section's bytes, measured once: they decide whether the step can fit one write, and
  // how it is cut when it cannot.
  const measured = new Map<SectionValue, number>();
  const bytesOf = (value: SectionValue): number => {
    let bytes = measured.get(value);
    if (bytes === undefined) {
      bytes = json ? encodeCanonicalJson(value).length : encodedSectionSize(value);
      measured.set(value, bytes);
    }
    return bytes;
  };
  if (pack !== 'single' || json) {
    const copies = pack === 'batch' ? Math.max(1, values.length) : 1;
    let sectionBytes = countBytes * copies;
    for (const value of values) {
      if (sectionBytes > maxWriteBytes) break;
      sectionBytes += bytesOf(value);
    }
    if (sectionBytes <= maxWriteBytes) {
      const whole = encodeMessages(values, properties, pack, format);
      if (writeSize(whole) <= maxWriteBytes) return [whole];
    }
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
