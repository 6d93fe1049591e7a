// Targets stay byte-identical (issue 18): every case of corpus-cases.ts runs on the embedded
// broker and its writes must equal, byte for byte, the recording in test/fixtures/corpus/.
// `UPDATE_CORPUS=1 npx vitest run --config vitest.unit.config.ts <this file>` (no broker
// needed) rewrites the recording; a change there is a wire-format change (see the corpus
// README). Then review `git diff test/fixtures/corpus/`: only the cases you meant to change.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ALL_ASSIGNMENTS,
  ALL_LATE_POLICIES,
  ALL_PACK_MODES,
  PACKINGS,
  WINDOW_FACTORIES,
  assignmentsUsed,
  corpusCases,
  earlyUsed,
  factoriesUsed,
  latePoliciesUsed,
  sessionMerges,
  type CorpusCase,
} from './corpus-cases.js';

const DIRECTORY = fileURLToPath(new URL('../../fixtures/corpus/', import.meta.url));
const UPDATE = process.env.UPDATE_CORPUS === '1';

// Floors: what the recording holds today (a case or message lost fails the test).
const MIN_CASES = 140;
const MIN_MESSAGES = 1_856;

/** One write as the broker stores it: the chunk's producer, publishing id and messages. */
interface RecordedWrite {
  readonly stream: string;
  readonly producer: string | null;
  readonly publishingId: string | null;
  /** Each message of the write: the encoded AMQP 1.0 message, hex. */
  readonly messages: readonly string[];
}

interface Recording {
  readonly case: string;
  readonly writes: readonly RecordedWrite[];
}

async function record(corpusCase: CorpusCase): Promise<Recording> {
  const { broker, streams } = await corpusCase.run();
  const writes = streams.flatMap((stream) =>
    broker
      .chunks(stream)
      .map((chunk) => ({
        stream,
        producer: chunk.writer?.producer ?? null,
        publishingId: chunk.writer?.publishingId.toString() ?? null,
        messages: chunk.messages.map((m) => Buffer.from(m.bytes).toString('hex')),
      }))
      // Each producer's writes in order; how the loops of a partitioned job interleave on one
      // stream is scheduling, not output (a stable sort keeps each producer's order).
      .sort((a, b) => (a.producer ?? '').localeCompare(b.producer ?? '')),
  );
  return { case: corpusCase.name, writes };
}

const fileOf = (name: string) => `${DIRECTORY}${name}.json`;

/** The first difference between two recordings of one case, in words; undefined if none. */
function firstDifference(expected: Recording, actual: Recording): string | undefined {
  const count = Math.max(expected.writes.length, actual.writes.length);
  for (let i = 0; i < count; i++) {
    const want = expected.writes[i];
    const got = actual.writes[i];
    if (want === undefined || got === undefined) {
      return `write ${i}: ${want === undefined ? 'not in the recording' : 'missing'} (recorded ${expected.writes.length} writes, got ${actual.writes.length})`;
    }
    const where = `write ${i} (stream '${want.stream}', producer ${want.producer}, publishing id ${want.publishingId})`;
    if (got.stream !== want.stream || got.producer !== want.producer) {
      return `${where}: written to '${got.stream}' by ${got.producer}`;
    }
    if (got.publishingId !== want.publishingId) {
      return `${where}: publishing id ${got.publishingId}`;
    }
    if (got.messages.length !== want.messages.length) {
      return `${where}: ${got.messages.length} messages instead of ${want.messages.length}`;
    }
    for (let m = 0; m < want.messages.length; m++) {
      const a = want.messages[m] as string;
      const b = got.messages[m] as string;
      if (a === b) continue;
      let at = 0;
      while (at < a.length && a[at] === b[at]) at++;
      return `${where}, message ${m}: first differing byte at ${Math.floor(at / 2)} (recorded ${a.length / 2} bytes, got ${b.length / 2})`;
    }
  }
  return undefined;
}

describe('the byte-identical corpus of target outputs', () => {
  const cases = corpusCases();

  it('records every case once, by a unique name', () => {
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length);
    if (UPDATE) return;
    const recorded = readdirSync(DIRECTORY).filter((file) => file.endsWith('.json'));
    expect(recorded.sort()).toEqual(cases.map((c) => `${c.name}.json`).sort());
  });

  it('writes today what the recording holds, byte for byte, for every case', async () => {
    if (UPDATE && !existsSync(DIRECTORY)) mkdirSync(DIRECTORY, { recursive: true });
    let messages = 0;
    const differences: string[] = [];
    for (const corpusCase of cases) {
      const actual = await record(corpusCase);
      for (const write of actual.writes) messages += write.messages.length;
      if (UPDATE) {
        writeFileSync(fileOf(corpusCase.name), `${JSON.stringify(actual, null, 2)}\n`);
        continue;
      }
      const expected = JSON.parse(readFileSync(fileOf(corpusCase.name), 'utf8')) as Recording;
      const difference = firstDifference(expected, actual);
      if (difference !== undefined) differences.push(`case '${corpusCase.name}': ${difference}`);
    }
    expect(differences).toEqual([]);
    expect(cases.length).toBeGreaterThanOrEqual(MIN_CASES);
    expect(messages).toBeGreaterThanOrEqual(MIN_MESSAGES);
  });

  it('covers every window factory the library exports, both kinds of each that has two, every packing, late policy and early update', () => {
    // The cases ran in the test above (tests of a file run in order): their windows are known.
    expect(WINDOW_FACTORIES.length).toBeGreaterThanOrEqual(5);
    expect([...factoriesUsed.keys()].sort()).toEqual([...WINDOW_FACTORIES].sort());
    const variants = (factory: string) =>
      [...(factoriesUsed.get(factory) ?? [])].map((v) => v.split(' ')[0]);
    for (const factory of ['tumbling', 'count', 'session']) {
      expect(new Set(variants(factory)), factory).toEqual(new Set(['step', 'event-time']));
    }
    expect([...assignmentsUsed].sort()).toEqual([...ALL_ASSIGNMENTS].sort());
    const built = [...factoriesUsed.values()].flatMap((set) => [...set]);
    // Calendar sizes (day and week) in both kinds; compaction by count, every and gap.
    for (const described of ['step tumbling(1d', 'step tumbling(1w', 'event-time tumbling(1d']) {
      expect(
        built.some((b) => b.startsWith(described)),
        described,
      ).toBe(true);
    }
    for (const step of ['count', 'every']) {
      expect(
        built.some((b) => b.startsWith(`step compact(${step}`)),
        step,
      ).toBe(true);
    }
    const packings = new Set(cases.map((c) => c.packing));
    expect([...packings].sort()).toEqual([...PACKINGS].sort());
    for (const pack of ALL_PACK_MODES) expect(packings.has(pack), pack).toBe(true);
    expect([...latePoliciesUsed].sort()).toEqual([...ALL_LATE_POLICIES].sort());
    expect([...earlyUsed].sort()).toEqual(['each-result', 'every']);
    // Sessions merged: a message bridged two sessions of a key (event-time sessions).
    expect(sessionMerges.count).toBeGreaterThan(0);
  });
});
