import { decodeCanonical, encodeCanonical } from '../codecs/canonical-msgpack.js';
import { decodeMessage, encodeMessage } from '../codecs/amqp-message.js';
import { CodecError } from '../codecs/codec-error.js';
import type { Key } from '../windows/window-buffer.js';
import type { ProcessingStage } from './errors.js';
import type { DeadLetter, StepResult } from './step-result.js';

/**
 * The wire format of results — part of the public API, documented in the README.
 *
 * A result is an AMQP 1.0 message. Its application properties (all strings, the type every
 * client reads safely) describe the step; its data sections, each one canonical msgpack
 * map, carry the outputs in first-appearance order of their keys, then at most one late
 * section, then at most one dead-letter section. With `pack: 'batch'` every section
 * travels in its own message of one sub-entry batch, each message with the same
 * properties plus its part number.
 */
export type PackMode = 'sections' | 'batch';

/** Version of this format, in the `sw-format` property. */
export const RESULT_FORMAT_VERSION = '1';

export const ResultProperty = {
  format: 'sw-format',
  source: 'sw-source',
  producer: 'sw-producer',
  window: 'sw-window',
  firstOffset: 'sw-first-offset',
  lastOffset: 'sw-last-offset',
  windowStart: 'sw-window-start',
  windowEnd: 'sw-window-end',
  messages: 'sw-messages',
  outputs: 'sw-outputs',
  late: 'sw-late',
  lateDropped: 'sw-late-dropped',
  deadLetters: 'sw-dead-letters',
  part: 'sw-part',
  parts: 'sw-parts',
} as const;

export interface ResultMetadata {
  readonly source: string;
  readonly producer: string;
  /** The window's description, e.g. "tumbling(1m)". */
  readonly window: string;
}

/** One logical output: a key's aggregate over the step's window. */
export interface ResultOutput<R = unknown> {
  readonly key: Key;
  readonly start: number;
  readonly end: number;
  readonly count: number;
  readonly value: R;
}

/** A result message as a consumer of the target stream reads it with `decodeResult`. */
export interface DecodedResult<R = unknown> extends ResultMetadata {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly windowStart: number | undefined;
  readonly windowEnd: number | undefined;
  readonly messages: number;
  /** Outputs of the whole step: with 'batch' packing, `outputs` below holds this message's part. */
  readonly outputCount: number;
  readonly lateCount: number;
  readonly lateDropped: number;
  readonly deadLetterCount: number;
  /** With 'batch' packing: this message's index among the step's messages, and their number. */
  readonly part: { readonly index: number; readonly of: number } | undefined;
  readonly outputs: readonly ResultOutput<R>[];
  readonly late: readonly unknown[];
  readonly deadLetters: readonly DeadLetter[];
}

/** Encodes a step's result as the messages of ONE write (one message, or one batch). */
export function encodeResult<R>(
  result: StepResult<R>,
  metadata: ResultMetadata,
  pack: PackMode,
): Uint8Array[] {
  const sections = encodeSections(result);
  const properties: Record<string, string> = {
    [ResultProperty.format]: RESULT_FORMAT_VERSION,
    [ResultProperty.source]: metadata.source,
    [ResultProperty.producer]: metadata.producer,
    [ResultProperty.window]: metadata.window,
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
  };
  if (pack === 'sections' || sections.length === 1) {
    return [encodeMessage({ applicationProperties: properties, body: { type: 'data', sections } })];
  }
  return sections.map((section, index) =>
    encodeMessage({
      applicationProperties: {
        ...properties,
        [ResultProperty.part]: String(index),
        [ResultProperty.parts]: String(sections.length),
      },
      body: { type: 'data', sections: [section] },
    }),
  );
}

function encodeSections<R>(result: StepResult<R>): Uint8Array[] {
  const sections: Uint8Array[] = [];
  const { window } = result;
  for (const output of result.outputs) {
    sections.push(
      encodeCanonical({
        type: 'output',
        key: output.key,
        start: window?.start ?? null,
        end: window?.end ?? null,
        count: output.count,
        value: output.value,
      }),
    );
  }
  if (result.late.length > 0) sections.push(encodeCanonical({ type: 'late', values: result.late }));
  if (result.deadLetters.length > 0) {
    sections.push(
      encodeCanonical({
        type: 'dead-letters',
        records: result.deadLetters.map((letter) => ({
          offset: letter.offset.toString(),
          stage: letter.stage,
          error: letter.error,
          message: letter.message,
        })),
      }),
    );
  }
  return sections;
}

/**
 * Reads a result message of the target stream: metadata and every section. Throws
 * CodecError when `bytes` is not a result of this format.
 */
export function decodeResult<R = unknown>(bytes: Uint8Array): DecodedResult<R> {
  const message = decodeMessage(bytes);
  const properties = message.applicationProperties ?? {};
  const text = (name: string): string => {
    const value = properties[name];
    if (typeof value !== 'string') {
      throw new CodecError(`result property '${name}' must be a string, got ${typeof value}`, 0);
    }
    return value;
  };
  const optional = (name: string): string | undefined =>
    properties[name] === undefined ? undefined : text(name);
  const integer = (name: string): number => Number(text(name));
  if (text(ResultProperty.format) !== RESULT_FORMAT_VERSION) {
    throw new CodecError(`unsupported result format '${text(ResultProperty.format)}'`, 0);
  }
  if (message.body?.type !== 'data') {
    throw new CodecError('a result carries its sections in data sections', 0);
  }

  const outputs: ResultOutput<R>[] = [];
  let late: unknown[] = [];
  let deadLetters: DeadLetter[] = [];
  for (const bytesOfSection of message.body.sections) {
    const section = decodeCanonical(bytesOfSection) as Record<string, unknown>;
    if (section.type === 'output') {
      outputs.push({
        key: section.key as Key,
        start: section.start as number,
        end: section.end as number,
        count: section.count as number,
        value: section.value as R,
      });
    } else if (section.type === 'late') {
      late = section.values as unknown[];
    } else if (section.type === 'dead-letters') {
      deadLetters = (section.records as Record<string, unknown>[]).map((record) => ({
        offset: BigInt(record.offset as string),
        stage: record.stage as ProcessingStage,
        error: record.error as string,
        message: record.message as Uint8Array,
      }));
    } else {
      throw new CodecError(`unknown result section type '${String(section.type)}'`, 0);
    }
  }
  const windowStart = optional(ResultProperty.windowStart);
  const windowEnd = optional(ResultProperty.windowEnd);
  const part = optional(ResultProperty.part);
  return {
    source: text(ResultProperty.source),
    producer: text(ResultProperty.producer),
    window: text(ResultProperty.window),
    firstOffset: BigInt(text(ResultProperty.firstOffset)),
    lastOffset: BigInt(text(ResultProperty.lastOffset)),
    windowStart: windowStart === undefined ? undefined : Number(windowStart),
    windowEnd: windowEnd === undefined ? undefined : Number(windowEnd),
    messages: integer(ResultProperty.messages),
    outputCount: integer(ResultProperty.outputs),
    lateCount: integer(ResultProperty.late),
    lateDropped: integer(ResultProperty.lateDropped),
    deadLetterCount: integer(ResultProperty.deadLetters),
    part:
      part === undefined ? undefined : { index: Number(part), of: integer(ResultProperty.parts) },
    outputs,
    late,
    deadLetters,
  };
}
