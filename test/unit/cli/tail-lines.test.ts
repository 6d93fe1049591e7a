// The lines of `stream-windows tail --json` (the schema the README documents), built from
// results as the wire format carries them: encoded, then decoded as tail reads them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toJson } from '../../../src/cli/json.js';
import { tailLines } from '../../../src/cli/tail-lines.js';
import { decodeResult } from '../../../src/result-format/result-decoder.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { type PackMode } from '../../../src/result-format/result-format.js';
import type { StepResult } from '../../../src/result-format/step-result.js';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const metadata = { source: 'readings', producer: 'sums-job', window: 'tumbling(1m)' };
const poison = new Uint8Array([0x00, 0x53, 0x75, 0xff]);

/** A step of 9 messages: two outputs (one an early update), two late values, one dead letter. */
const step: StepResult<unknown> = {
  firstOffset: 2n ** 60n,
  lastOffset: 2n ** 60n + 8n,
  messages: 9,
  window: { start: T0, end: T0 + MINUTE },
  outputs: [
    { key: 'a', count: 3, value: { sum: 12, big: 2n ** 63n } },
    { key: 7, count: 1, value: [1.5], start: T0 + MINUTE, end: T0 + 2 * MINUTE, final: false },
  ],
  late: [{ sensor: 'a', value: 4 }, 'late text'],
  lateDropped: 0,
  filtered: 0,
  deadLetters: [{ offset: 2n ** 60n + 5n, stage: 'decode', error: 'not JSON', message: poison }],
};

/** `step` as `tail` reads it: the result at target offset 40, its next one at 41. */
function readBack(result: StepResult<unknown>, pack: PackMode = 'sections') {
  const [bytes] = encodeResult(result, metadata, pack);
  return { offset: 40n, next: 41n, resumeFrom: 41n, result: decodeResult(bytes as Uint8Array) };
}

const resultFields = {
  offset: '40',
  next: '41',
  producer: 'sums-job',
  source: 'readings',
  windowing: 'tumbling(1m)',
  publishingId: '1152921504606846984',
  lastOffset: '1152921504606846984',
};
const stepWindow = {
  start: T0,
  end: T0 + MINUTE,
  startIso: '2026-01-01T00:00:00.000Z',
  endIso: '2026-01-01T00:01:00.000Z',
};

describe('tail --json lines', () => {
  it('should give one line per output, late value and dead letter, in that order, in every packing', () => {
    for (const pack of ['sections', 'single'] as const) {
      const lines = tailLines(readBack(step, pack)).map(
        (line) => JSON.parse(toJson(line)) as unknown,
      );
      expect(lines).toEqual([
        {
          kind: 'output',
          ...resultFields,
          window: stepWindow,
          key: 'a',
          count: 3,
          // eslint-disable-next-line @typescript-eslint/no-deprecated -- a key of the data, not String.prototype.big
          value: { sum: 12, big: '9223372036854775808' },
          final: true,
          continues: false,
        },
        {
          kind: 'output',
          ...resultFields,
          window: {
            start: T0 + MINUTE,
            end: T0 + 2 * MINUTE,
            startIso: '2026-01-01T00:01:00.000Z',
            endIso: '2026-01-01T00:02:00.000Z',
          },
          key: 7,
          count: 1,
          value: [1.5],
          final: false,
          continues: false,
        },
        { kind: 'late', ...resultFields, window: stepWindow, value: { sensor: 'a', value: 4 } },
        { kind: 'late', ...resultFields, window: stepWindow, value: 'late text' },
        {
          kind: 'dead-letter',
          ...resultFields,
          window: stepWindow,
          sourceOffset: '1152921504606846981',
          stage: 'decode',
          error: 'not JSON',
          message: Buffer.from(poison).toString('base64'),
        },
      ]);
    }
  });

  it('should keep its key order, so a line reads the same from one run to the next', () => {
    const [output, late, deadLetter] = tailLines(
      readBack({ ...step, outputs: [step.outputs[0] as (typeof step.outputs)[0]], late: [1] }),
    ).map((line) => Object.keys(JSON.parse(toJson(line)) as object));
    const common = ['kind', ...Object.keys(resultFields), 'window'];
    expect(output).toEqual([...common, 'key', 'count', 'value', 'final', 'continues']);
    expect(late).toEqual([...common, 'value']);
    expect(deadLetter).toEqual([...common, 'sourceOffset', 'stage', 'error', 'message']);
  });

  it("should have every field, and no other, in the CLI reference's table", () => {
    const readme = readFileSync(new URL('../../../docs/reference/cli.md', import.meta.url), 'utf8');
    const table = readme.slice(
      readme.indexOf('| field '),
      readme.indexOf('\n\n', readme.indexOf('| field ')),
    );
    const documented = table
      .split('\n')
      .slice(2)
      .flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`(\w+)`/g)].map((m) => m[1]));
    const printed = tailLines(readBack(step)).flatMap((line) => Object.keys(line));
    expect(new Set(documented)).toEqual(new Set(printed));
    expect(documented.length).toBeGreaterThan(15);
  });

  it('should mark a window a flush published before as continued', () => {
    const continued = {
      ...step,
      outputs: [{ key: 'a', count: 2, value: 5, continues: true as const }],
    };
    const [line] = tailLines(readBack(continued));
    expect(line).toMatchObject({ kind: 'output', final: true, continues: true });
  });

  it('should give late and dead-letter lines a null window when their result has none', () => {
    const windowless = { ...step, window: null, outputs: [] };
    const lines = tailLines(readBack(windowless));
    expect(lines.map((line) => [line.kind, line.window])).toEqual([
      ['late', null],
      ['late', null],
      ['dead-letter', null],
    ]);
  });

  it('should give no line for a result without output, late value or dead letter', () => {
    const empty = { ...step, outputs: [], late: [], deadLetters: [], lateDropped: 3, filtered: 6 };
    expect(tailLines(readBack(empty))).toEqual([]);
  });
});
