import { NotAResultError } from '../common/errors.js';
import type { Source } from '../ports/ports.js';
import { readResults, type ReadResult } from '../result-format/result-reader.js';
import { connect } from '../rabbitmq/connection.js';
import { ExitCode, streamOption, type Command, type OptionValues } from './command.js';
import { toJson } from './json.js';
import { styleFor, type Style } from './style.js';
import { isoTime, tableRow } from './table.js';
import { stopSignals } from './stop-signals.js';
import { tailLines } from './tail-lines.js';
import { tailStart, type TailFrom } from './tail-start.js';
import { UsageError } from './usage-error.js';

/** Fixed widths: the table is printed as results arrive, before the widest cell is known. */
const COLUMNS = [
  ['OFFSET', 8],
  ['WINDOW START', 24],
  ['WINDOW END', 24],
  ['KEY', 16],
  ['COUNT', 6],
  ['VALUE', 0],
] as const;
const WIDTHS = COLUMNS.map(([, width]) => width);
const HEADER = tableRow(
  COLUMNS.map(([header]) => header),
  WIDTHS,
);

export const tailCommand: Command = {
  name: 'tail',
  summary: 'Follow a target stream and print its results as they are written',
  help: `Usage: stream-windows tail --target T [--from first|last|next|OFFSET] [--count N] [--json]

Follows the target stream T and prints each result: one row per output (result offset,
window start and end in UTC, key, count of messages, value), then one per dead letter
(its source offset, the stage that failed and why). With --json, one JSON object
per line for every output, late value and dead letter, and nothing else: "kind" (output,
late or dead-letter), "offset" and "next" (target offsets), "producer", "source",
"windowing", "lastOffset", "publishingId" (the same, kept), "window" ({start, end, startIso, endIso}), then "key",
"count", "value", "final", "continues" (output), "value" (late), or "sourceOffset",
"stage", "error", "message" (dead letter). Offsets as strings, times in epoch ms,
binaries in base64; the README's "Command line" section has the whole schema.
Stops on SIGINT or SIGTERM (exit 0; a second signal ends it at once, exit 0 as well),
after --count results, or once its reader went away (| head -n 3), exit 0 as well: at
once, or on a pipe without GNU tail on the PATH, at its next line.

A message that is not a result of the stream-windows format (a job with its own encode,
another producer's message) is skipped: a line on stderr names its offset and why.

Options:
  --target T   Target stream to follow
  --from F     first: everything the stream holds; last: from its last result;
               next: only results written from now on; OFFSET: from the first result
               starting at or after that offset (default: last)
  --count N    Stop after N results`,
  options: {
    target: { type: 'string' },
    from: { type: 'string' },
    count: { type: 'string' },
  },
  async run(values, { io, urls, json, colour }) {
    const target = streamOption(values, 'target', 'tail', urls);
    const from = parseFrom(values);
    const count = parseCount(values);
    // Heard from the start: a Ctrl-C, or the reader going, while connecting is a stop as well.
    const stopping = stopSignals();
    const reader = io.watchReader?.();
    const stop =
      reader === undefined ? stopping.signal : AbortSignal.any([stopping.signal, reader.signal]);
    try {
      const rabbit = await connect(urls, { signal: stop }).catch((error: unknown) => {
        if (stop.aborted) return undefined; // the connect was given up for the stop
        throw error;
      });
      if (rabbit === undefined) return ExitCode.ok;
      try {
        const source = rabbit.source(target);
        // Known to exist before anything is printed: a missing stream fails here, header-less.
        const start = await tailStart(source, from);
        const style = styleFor(colour);
        if (!json) io.stdout.write(`${style.bold(HEADER)}\n`);
        const print = (item: ReadResult): void => {
          const text = json ? jsonLines(item) : rows(item, style);
          if (text !== '') io.stdout.write(text);
        };
        await follow(source, start, count, stop, print, (error) =>
          io.stderr.write(`stream-windows: skipped: ${error.message}\n`),
        );
        return ExitCode.ok;
      } finally {
        await rabbit.close();
      }
    } finally {
      reader?.dispose();
      stopping.dispose();
    }
  },
};

/**
 * Prints results from `from` until `signal` aborts or `count` were printed. A message that
 * is not a result ends `readResults` with a NotAResultError naming its offset: reported,
 * and the read goes on after it.
 */
async function follow(
  source: Source,
  from: bigint | 'first' | 'next',
  count: number | undefined,
  signal: AbortSignal,
  print: (item: ReadResult) => void,
  skipped: (error: NotAResultError) => void,
): Promise<void> {
  let next = from;
  let printed = 0;
  while (!signal.aborted) {
    try {
      for await (const item of readResults(source, { from: next, signal })) {
        print(item);
        next = item.next;
        if (++printed === count) return;
      }
      return; // aborted
    } catch (error) {
      if (!(error instanceof NotAResultError)) throw error;
      skipped(error);
      next = error.offset + 1n;
    }
  }
}

/** The `--json` lines of one result (see tail-lines.ts); empty when it has none. */
function jsonLines(item: ReadResult): string {
  return tailLines(item)
    .map((line) => `${toJson(line)}\n`)
    .join('');
}

/**
 * The table rows of one result: one per output (or one saying what it holds instead), then one
 * per dead letter, in red: a message the job could not process is what an operator looks for.
 */
function rows(item: ReadResult, style: Style): string {
  const { result } = item;
  const offset = String(item.offset);
  const start = isoTime(result.windowStart);
  const end = isoTime(result.windowEnd);
  const outputs =
    result.outputs.length === 0
      ? [
          tableRow(
            [offset, start, end, '-', String(result.messages), style.dim(heldInstead(result))],
            WIDTHS,
          ),
        ]
      : result.outputs.map((output) =>
          tableRow(
            [
              offset,
              isoTime(output.start),
              isoTime(output.end),
              output.key === null ? 'null' : String(output.key),
              String(output.count),
              toJson(output.value),
            ],
            WIDTHS,
          ),
        );
  const deadLetters = result.deadLetters.map((letter) =>
    tableRow(
      [
        offset,
        start,
        end,
        '-',
        '-',
        style.red(
          `dead letter: source offset ${letter.offset}, ${letter.stage} failed: ${letter.error}`,
        ),
      ],
      WIDTHS,
    ),
  );
  return [...outputs, ...deadLetters].map((row) => `${row}\n`).join('');
}

/** What a result without outputs holds. */
function heldInstead(result: ReadResult['result']): string {
  return `no outputs; late ${result.lateCount}, dropped ${result.lateDropped}, dead letters ${result.deadLetterCount}`;
}

function parseFrom(values: OptionValues): TailFrom {
  const from = values.from;
  if (from === undefined) return 'last';
  if (from === 'first' || from === 'last' || from === 'next') return from;
  if (typeof from === 'string' && /^(0|[1-9][0-9]*)$/.test(from)) return BigInt(from);
  throw new UsageError(
    `--from must be first, last, next or an offset (an integer >= 0), given: '${String(from)}'`,
    'tail',
  );
}

function parseCount(values: OptionValues): number | undefined {
  const count = values.count;
  if (count === undefined) return undefined;
  if (typeof count === 'string' && /^[1-9][0-9]{0,15}$/.test(count)) return Number(count);
  throw new UsageError(`--count must be an integer >= 1, given: '${String(count)}'`, 'tail');
}
