import { encodeCanonicalJson } from '../codecs/canonical-json.js';
import {
  CanonicalMsgpackWriter,
  preEncoded,
  type PreEncoded,
} from '../codecs/canonical-msgpack-writer.js';
import { encodeMessage } from '../codecs/amqp-message.js';
import { CodecError } from '../codecs/codec-error.js';
import type { Key, KeyedOutput } from '../common/keyed-output.js';
import { type ProcessingStage } from '../common/errors.js';
import type { RecoveryState, StepResult } from './step-result.js';
import { mergeRecordText } from './merge-record-text.js';
import {
  HOLDS_NOTHING,
  ResultProperty,
  RESULT_FORMAT_VERSION,
  SECTIONS_CONTENT_TYPE,
  SingleContentType,
  type PackMode,
  type ResultMetadata,
  type SingleFormat,
} from './result-format.js';

/*
 * A step's result encoded in the wire format (./result-format.ts) as the messages of one write;
 * ./step-writes.ts cuts a step too large for one.
 */

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
  const properties = stepProperties(result, metadata);
  if (pack === 'single' && format === 'msgpack') {
    return [encodeSingleWithin(result, properties, Number.POSITIVE_INFINITY) as Uint8Array];
  }
  return encodeMessages(sectionValues(result), properties, pack, format);
}

/**
 * The one message of `pack: 'single'` in msgpack, its array written straight from the result
 * (no section value per output, each output's map written once); undefined as soon as the
 * array passes `budget` bytes, so that a step too large for one write costs no more than that.
 */
export function encodeSingleWithin<R>(
  result: StepResult<R>,
  properties: Record<string, string>,
  budget: number,
): Uint8Array | undefined {
  const { outputs, window } = result;
  const others = otherSections(result);
  const windowStart = window === null ? null : window.start;
  const windowEnd = window === null ? null : window.end;
  writer.start();
  writer.arrayHeader(outputs.length + others.length);
  for (let index = 0; index < outputs.length; index++) {
    const output = outputs[index] as KeyedOutput<R>;
    writeOutput(output, output.start ?? windowStart, output.end ?? windowEnd, 2);
    if (writer.size > budget) return undefined;
  }
  for (const section of others) writeSection(section, 2);
  if (writer.size > budget) return undefined;
  const types = others.map((section) => section.type);
  return encodeMessage({
    properties: { contentType: SingleContentType.msgpack },
    applicationProperties: {
      ...properties,
      [ResultProperty.holds]: holdsOfTypes(outputs.length > 0 ? ['output', ...types] : types),
    },
    body: { type: 'data', sections: [writer.finish()] },
  });
}

/** The step's messages, `pack`ed, all with `properties`. */
export function encodeMessages(
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
export function batchPart(
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
export function stepProperties<R>(
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

/** `sw-holds` of a whole result: its section types in order, each once. */
export function holdsOf(values: readonly SectionValue[]): string {
  return holdsOfTypes(values.map((value) => value.type));
}

/** `sw-holds` of sections of these types, in order. */
function holdsOfTypes(sectionTypes: readonly SectionValue['type'][]): string {
  const types = [...new Set(sectionTypes)];
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
  if (state.merge !== undefined) properties[ResultProperty.merge] = mergeRecordText(state.merge);
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
export type SectionValue =
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
export function sectionValues<R>(result: StepResult<R>): SectionValue[] {
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
  sections.push(...otherSections(result));
  return sections;
}

/** The sections after the outputs: the late values and the dead letters, each when any. */
function otherSections<R>(result: StepResult<R>): SectionValue[] {
  const sections: SectionValue[] = [];
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
export function encodeSections(values: readonly SectionValue[]): Uint8Array {
  writer.start();
  writer.arrayHeader(values.length);
  for (const value of values) writeSection(value, 2);
  return writer.finish();
}

/** `encodeCanonical(value)`: one section as its own data section or batch part. */
export function encodeSection(value: SectionValue): Uint8Array {
  writer.start();
  writeSection(value, 1);
  return writer.finish();
}

/** `encodeSection(value).length`, without copying the bytes out. */
export function encodedSectionSize(value: SectionValue): number {
  writer.start();
  writeSection(value, 1);
  return writer.size;
}

/** A section at `depth`: an output's map by `writeOutput`, the other sections as they are. */
function writeSection(section: SectionValue, depth: number): void {
  if (section.type === 'output') writeOutput(section, section.start, section.end, depth);
  else writer.value(section, depth);
}

/**
 * An output's map at `depth` with its keys in canonical order, those whose value is undefined
 * left out as the canonical encoder leaves them: `final` written only for an early update and
 * `continues` only for a continuation, so that other outputs keep their bytes.
 */
function writeOutput(
  output: Omit<KeyedOutput<unknown>, 'start' | 'end'>,
  start: number | null,
  end: number | null,
  depth: number,
): void {
  const { value } = output;
  const early = output.final === false;
  const continues = output.continues === true;
  writer.mapHeader(5 + (early ? 1 : 0) + (continues ? 1 : 0) + (value === undefined ? 0 : 1));
  if (continues) {
    writer.preEncoded(OutputKey.continues);
    writer.value(true, depth + 1);
  }
  writer.preEncoded(OutputKey.count);
  writer.value(output.count, depth + 1);
  writer.preEncoded(OutputKey.end);
  writer.value(end, depth + 1);
  if (early) {
    writer.preEncoded(OutputKey.final);
    writer.value(false, depth + 1);
  }
  writer.preEncoded(OutputKey.key);
  writer.value(output.key, depth + 1);
  writer.preEncoded(OutputKey.start);
  writer.value(start, depth + 1);
  writer.preEncoded(OutputKey.type);
  writer.preEncoded(OUTPUT_TYPE);
  if (value !== undefined) {
    writer.preEncoded(OutputKey.value);
    writer.value(value, depth + 1);
  }
}
