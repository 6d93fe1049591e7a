import type { Key } from '../common/keyed-output.js';
import type { ProcessingStage } from '../common/errors.js';
import type { ReadResult } from '../result-format/result-reader.js';
import { isoTime } from './table.js';

/**
 * The lines of `stream-windows tail --json`, the bridge to jq and other languages: one JSON
 * object per output, late value and dead letter of a result, in the result's order. A
 * documented interface (README, "Command line"): fields may be added, never renamed or
 * retyped. Offsets and publishing ids are decimal strings (JSON numbers lose precision
 * above 2^53 in most readers); times are epoch ms, with ISO 8601 UTC next to them.
 */
export type TailLine = OutputLine | LateLine | DeadLetterLine;

/** A window's bounds, [start, end). */
export interface TailWindow {
  readonly start: number;
  readonly end: number;
  readonly startIso: string;
  readonly endIso: string;
}

/** What every line says of the result that carries it. */
interface ResultFields {
  /** Target offset of the result's first message: the same on every line of one result. */
  readonly offset: string;
  /** Target offset after the result: `--from` to read on after it. */
  readonly next: string;
  readonly producer: string;
  /** The source stream, and the window's description (e.g. "tumbling(1m)"). */
  readonly source: string;
  readonly windowing: string;
  /** The step's last source offset: with `producer`, it names the result. */
  readonly lastOffset: string;
  /**
   * The same as `lastOffset`, kept from when it was the publishing id (before a step could span
   * writes; see ../result-format/publishing-id.ts).
   */
  readonly publishingId: string;
}

export interface OutputLine extends ResultFields {
  readonly kind: 'output';
  readonly window: TailWindow;
  readonly key: Key;
  /** Messages folded into the value. */
  readonly count: number;
  readonly value: unknown;
  /** false for an early update of a window still open: a later line carries it again. */
  readonly final: boolean;
  /** true when a flush published this window before: this line holds what came after. */
  readonly continues: boolean;
}

export interface LateLine extends ResultFields {
  readonly kind: 'late';
  /** The window of the result that carries the value (null when it has none), not the value's own. */
  readonly window: TailWindow | null;
  readonly value: unknown;
}

export interface DeadLetterLine extends ResultFields {
  readonly kind: 'dead-letter';
  /** The window of the result that carries it, null when it has none. */
  readonly window: TailWindow | null;
  /** The source offset of the message that could not be processed. */
  readonly sourceOffset: string;
  readonly stage: ProcessingStage;
  readonly error: string;
  /** The source message as stored (a whole AMQP 1.0 message), in base64 once serialised. */
  readonly message: Uint8Array;
}

/** The lines of one result: none when it holds no output, late value or dead letter. */
export function tailLines(item: ReadResult): TailLine[] {
  const { result } = item;
  const common: ResultFields = {
    offset: String(item.offset),
    next: String(item.next),
    producer: result.producer,
    source: result.source,
    windowing: result.window,
    publishingId: String(result.lastOffset),
    lastOffset: String(result.lastOffset),
  };
  const resultWindow =
    result.windowStart === undefined || result.windowEnd === undefined
      ? null
      : tailWindow(result.windowStart, result.windowEnd);
  return [
    ...result.outputs.map((output): OutputLine => ({
      kind: 'output',
      ...common,
      window: tailWindow(output.start, output.end),
      key: output.key,
      count: output.count,
      value: output.value,
      final: output.final,
      continues: output.continues,
    })),
    ...result.late.map((value): LateLine => ({
      kind: 'late',
      ...common,
      window: resultWindow,
      value,
    })),
    ...result.deadLetters.map((letter): DeadLetterLine => ({
      kind: 'dead-letter',
      ...common,
      window: resultWindow,
      sourceOffset: String(letter.offset),
      stage: letter.stage,
      error: letter.error,
      message: letter.message,
    })),
  ];
}

function tailWindow(start: number, end: number): TailWindow {
  return { start, end, startIso: isoTime(start), endIso: isoTime(end) };
}
