// quoteLiteral: any text without NUL, written into a statement as a literal, reads back as that
// text in PostgreSQL (PGlite), whether standard_conforming_strings is on (the default: a
// backslash is a character) or off (a backslash escapes in a plain literal). The checkpoint's
// claim writes the sink's and the stream's names that way, with no parameter, so the adapter
// can send it in the round trip of BEGIN.
import type { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/errors.js';
import { quoteLiteral } from '../../src/database/sql-literal.js';
import { Coverage, propertyParameters } from '../support/arbitraries/coverage.js';
import { startPglite } from '../support/jobs/sink-fixture.js';
import { bound } from '../support/timing.js';

let db: PGlite;
beforeAll(async () => {
  db = await startPglite();
}, bound(60_000));
afterAll(async () => {
  await db.close();
});

/** Text heavy in what a literal must escape: quotes, backslashes, E and unicode. */
const awkward = fc.string({
  unit: fc.oneof(
    fc.constantFrom("'", '\\', '"', 'E', 'e', '$', ';', '\n', '\t', ' '),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\0'),
  ),
  maxLength: 12,
});

const PARAMETERS = propertyParameters(200);

describe('quoteLiteral', () => {
  it('writes the literals pg writes: quotes doubled, an E literal with doubled backslashes', () => {
    expect(quoteLiteral('name', "it's")).toBe("'it''s'");
    expect(quoteLiteral('name', 'a\\b')).toBe("E'a\\\\b'");
    expect(quoteLiteral('name', "\\'")).toBe("E'\\\\'''");
    expect(quoteLiteral('name', '')).toBe("''");
  });

  it('refuses a NUL with a ConfigError naming the setting', () => {
    expect(() => quoteLiteral('stream', 'a\0b')).toThrow(ConfigError);
    expect(() => quoteLiteral('stream', 'a\0b')).toThrow(/^stream must not hold a NUL character/);
  });

  for (const setting of ['on', 'off'] as const) {
    it(`reads back as the text in PostgreSQL, standard_conforming_strings ${setting} (property)`, async () => {
      await db.exec(`SET standard_conforming_strings = ${setting}`);
      const coverage = new Coverage(`literals, standard_conforming_strings ${setting}`);
      await fc.assert(
        fc.asyncProperty(awkward, async (text) => {
          coverage.run();
          coverage.count('a quote', text.includes("'"));
          coverage.count('a backslash', text.includes('\\'));
          const { rows } = await db.query<{ text: string }>(
            `SELECT ${quoteLiteral('text', text)} AS text`,
          );
          expect(rows[0]?.text).toBe(text);
        }),
        PARAMETERS,
      );
      coverage.expectRates({ 'a quote': 0.15, 'a backslash': 0.15 });
    });
  }
});
