import type { Key } from '../common/keyed-output.js';
import type { DeadLetter, RecoveryState } from './step-result.js';

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

/** `sw-holds` of a result without any section (a flush of filtered messages only). */
export const HOLDS_NOTHING = 'none';

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
  /**
   * A job over several inputs (`mergeInputs`) only: the merge record at the resume offset, a
   * merged position (./merge-record-text.ts); absent on every other result.
   */
  merge: 'sw-merge',
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
