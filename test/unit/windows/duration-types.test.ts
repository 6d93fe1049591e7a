// The types of a duration setting take the texts the parser takes, no other: each text below is
// given to the type (compiled by tsc, in `npm test`'s type-check and in the last test here,
// where an expected error the type does not raise fails) and to the parser.
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parseDuration, parseWindowSize } from '../../../src/windows/duration.js';
import { ConfigError } from '../../../src/common/errors.js';
import type {
  Duration,
  EventTimeTumblingOptions,
  TumblingSize,
} from '../../../src/windows/index.js';
import { bound } from '../../support/timing.js';

const durations: Duration[] = ['0ms', '1ms', '250ms', '0s', '30s', '90m', '2h', '1000000h', 1500];
const sizes: TumblingSize[] = ['1d', '1w', '1mo', '24h', 60_000];

// Texts the parser refuses, each refused by the type too (the calls only collect them).
const refusedDurations: unknown[] = [];
const refusedSizes: unknown[] = [];
const duration = (value: Duration) => refusedDurations.push(value);
const size = (value: TumblingSize) => refusedSizes.push(value);
const eventTimeOptions = (value: EventTimeTumblingOptions) => refusedDurations.push(value.grace);
// @ts-expect-error a unit in words
size('1 minute');
// @ts-expect-error a unit in words, in an option
eventTimeOptions({ grace: '30 seconds' });
// @ts-expect-error a decimal number
duration('1.5h');
// @ts-expect-error a number without a unit
duration('90');
// @ts-expect-error a leading zero
duration('01s');
// @ts-expect-error a hexadecimal number (a bigint literal, not the parser's digits)
duration('0x10s');
// @ts-expect-error an exponent
duration('1e3ms');
// @ts-expect-error a leading space
duration(' 1s');
// @ts-expect-error a negative length
duration('-5s');
// @ts-expect-error a calendar unit where a fixed duration goes
duration('1d');
// @ts-expect-error a multiple of a calendar unit
size('2d');
// @ts-expect-error a calendar unit with a leading zero
size('01mo');

describe('the duration types', () => {
  it('take what the parser takes', () => {
    for (const duration of durations) {
      expect(() => parseDuration('d', duration, 'non-negative')).not.toThrow();
    }
    for (const size of sizes) expect(() => parseWindowSize('size', size)).not.toThrow();
  });

  it('refuse what the parser refuses', () => {
    expect(refusedDurations).toHaveLength(9);
    for (const text of refusedDurations) {
      expect(() => parseDuration('d', text, 'non-negative'), String(text)).toThrow(ConfigError);
    }
    expect(refusedSizes).toEqual(['1 minute', '2d', '01mo']);
    for (const text of refusedSizes) {
      expect(() => parseWindowSize('size', text), String(text)).toThrow(ConfigError);
    }
  });

  it(
    'compile as this file says: every @ts-expect-error is needed',
    () => {
      const root = fileURLToPath(new URL('../../..', import.meta.url));
      const config = ts.readConfigFile(join(root, 'tsconfig.json'), (p) => ts.sys.readFile(p));
      const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
      const program = ts.createProgram([fileURLToPath(import.meta.url)], {
        ...options,
        noEmit: true,
      });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(diagnostics).toEqual([]);
    },
    bound(120_000),
  );
});
