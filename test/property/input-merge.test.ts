// The merge of several inputs (docs/internals/many-inputs.md): whatever order the inputs are
// read in, in chunks of any size, with inputs skewed, out of order, late, and left out as idle
// and coming back, the released sequence is the sort of the items by merge key (a reference
// computed here from the inputs alone and the floors the merge recorded); and a merge started
// from a record at any position, reading every input again from the record's `from` in another
// order, releases the same items at the same positions.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InputMerge, type ReleasedItem } from '../../src/engine/merge/input-merge.js';
import { compareMergeKeys, type MergeKey } from '../../src/engine/merge/merge-key.js';
import type { InputFloor, MergeRecord } from '../../src/engine/merge/merge-record.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';

const PARAMETERS = propertyParameters(300);

/** One input: the event time of each message, offset = index. */
type Input = readonly number[];

/** An action of a run: what a random reading order does next. */
type Action =
  | { readonly kind: 'arrive'; readonly input: number; readonly count: number }
  | { readonly kind: 'read'; readonly input: number; readonly count: number }
  | { readonly kind: 'idle'; readonly input: number }
  | { readonly kind: 'release' };

/** Event times going forward by about `step`, with disorder, some far late, from `start`. */
const inputArb = (start: number): fc.Arbitrary<Input> =>
  fc
    .array(
      fc.record({
        step: fc.integer({ min: 0, max: 20 }),
        jitter: fc.integer({ min: -25, max: 25 }),
        farLate: fc.integer({ min: 0, max: 19 }),
      }),
      { minLength: 0, maxLength: 40, size: 'max' },
    )
    .map((moves) => {
      let time = start;
      const times = moves.map(({ step, jitter, farLate }) => {
        time += step;
        return farLate === 0 ? time - 200 : time + jitter;
      });
      // Its end: a message far ahead moves its watermark past everything before it.
      return [...times, start + 100_000];
    });

const scenarioArb = fc
  .record({
    inputs: fc.integer({ min: 1, max: 4 }),
    skew: fc.constantFrom(0, 60, 150, 300),
    maxOutOfOrderness: fc.integer({ min: 0, max: 30 }),
  })
  .chain(({ inputs, skew, maxOutOfOrderness }) =>
    fc.record({
      maxOutOfOrderness: fc.constant(maxOutOfOrderness),
      // The first input lags `skew` behind the others in event time.
      data: fc.tuple(...Array.from({ length: inputs }, (_, i) => inputArb(i === 0 ? 0 : skew))),
      first: actionsArb(inputs),
      again: actionsArb(inputs),
      resumeAt: fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000),
      forgetAt: fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000),
    }),
  );

function actionsArb(inputs: number): fc.Arbitrary<Action[]> {
  const input = fc.integer({ min: 0, max: inputs - 1 });
  const count = fc.integer({ min: 1, max: 8 });
  return fc.array(
    fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('arrive' as const),
          input,
          count: fc.constant(1),
        }),
      },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), input, count }) },
      // Often enough, and mostly the lagging input 0, that an input left out is passed by the
      // others and then comes back (a floor).
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('idle' as const),
          input: fc.oneof(fc.constant(0), input),
        }),
      },
      { weight: 2, arbitrary: fc.constant({ kind: 'release' as const }) },
    ),
    { minLength: 20, maxLength: 250, size: 'max' },
  );
}

/**
 * Runs `actions` over `data` from `from` (per input), then reads the rest and releases. An
 * input is left out as idle only when it has read all that has arrived, as a caller watching
 * a caught-up source would. `allArrived`: the whole inputs are there from the start (a restart).
 */
function drive(
  merge: InputMerge<null>,
  data: readonly Input[],
  actions: readonly Action[],
  from: readonly bigint[],
  allArrived: boolean,
  seen: { skipped: number; mostHeld: number },
): ReleasedItem<null>[] {
  const arrived = data.map((input, i) => (allArrived ? input.length : Number(from[i])));
  const read = from.map(Number);
  const released: ReleasedItem<null>[] = [];
  const readUpTo = (i: number, end: number): void => {
    for (; (read[i] as number) < end; read[i] = (read[i] as number) + 1) {
      const offset = read[i] as number;
      const kept = merge.offer(i, BigInt(offset), (data[i] as Input)[offset] as number, null);
      if (!kept) seen.skipped++;
    }
    seen.mostHeld = Math.max(seen.mostHeld, merge.heldItems);
  };
  for (const action of actions) {
    const i = action.kind === 'release' ? 0 : action.input;
    const length = (data[i] as Input).length;
    if (action.kind === 'arrive')
      arrived[i] = Math.min(length, (arrived[i] as number) + action.count);
    if (action.kind === 'read') {
      readUpTo(i, Math.min(arrived[i] as number, (read[i] as number) + action.count));
    }
    if (action.kind === 'idle' && read[i] === arrived[i]) {
      // As a caller does: it leaves an input out to release what the input held back.
      merge.leaveOut(i);
      released.push(...merge.release());
    }
    if (action.kind === 'release') released.push(...merge.release());
  }
  data.forEach((input, i) => readUpTo(i, input.length));
  released.push(...merge.release());
  return released;
}

/** The merged sequence by definition: merge times from each input alone and its floors, sorted. */
function reference(
  data: readonly Input[],
  maxOutOfOrderness: number,
  floors: readonly (readonly InputFloor[])[],
): MergeKey[] {
  const keys: MergeKey[] = [];
  data.forEach((input, i) => {
    let max = Number.NEGATIVE_INFINITY;
    input.forEach((eventTime, offset) => {
      let floor = Number.NEGATIVE_INFINITY;
      for (const f of floors[i] ?? []) if (f.offset <= BigInt(offset)) floor = f.floor;
      const watermark = Math.max(max - maxOutOfOrderness, floor);
      keys.push({ mergeTime: Math.max(eventTime, watermark), input: i, offset: BigInt(offset) });
      max = Math.max(max, eventTime);
    });
  });
  return keys.sort(compareMergeKeys);
}

const keyOf = ({ mergeTime, input, offset }: MergeKey): MergeKey => ({ mergeTime, input, offset });

describe('the merge of several inputs', () => {
  it(
    'releases the sort of its items by merge key in any reading order, and a merge restarted from a record at any position releases the same items at the same positions',
    () => {
      const coverage = new Coverage('input merge');
      fc.assert(
        fc.property(
          scenarioArb,
          ({ maxOutOfOrderness, data, first, again, resumeAt, forgetAt }) => {
            coverage.run();
            const inputs = data.length;
            const seen = { skipped: 0, mostHeld: 0 };
            const merge = new InputMerge<null>(inputs, maxOutOfOrderness);
            const zeros = data.map(() => 0n);
            const released = drive(merge, data, first, zeros, false, seen);

            // Positions count up from 0; the sequence is the reference's prefix.
            const all = merge.recordAt(0n);
            const floors = all.inputs.map((input) => input.floors);
            const expected = reference(data, maxOutOfOrderness, floors);
            expect(released.map((item) => item.position)).toEqual(
              released.map((_, p) => BigInt(p)),
            );
            expect(released.map(keyOf)).toEqual(expected.slice(0, released.length));

            // A record at a random position, after forgetting what comes before a random earlier one.
            const end = Number(merge.position);
            const resume = BigInt(Math.floor(resumeAt * end));
            merge.forgetBefore(BigInt(Math.floor(forgetAt * Number(resume))));
            const record: MergeRecord = merge.recordAt(resume);
            const restarted = new InputMerge<null>(inputs, maxOutOfOrderness, record);
            const froms = data.map((_, i) => restarted.startOffset(i));
            const replayed = drive(restarted, data, again, froms, true, seen);
            expect(replayed[0]?.position ?? resume).toBe(resume);
            const overlap = Math.min(replayed.length, released.length - Number(resume));
            expect(replayed.slice(0, overlap)).toEqual(
              released.slice(Number(resume), Number(resume) + overlap),
            );
            // The restarted merge decided no floor of its own (every input had arrived whole).
            expect(replayed.map(keyOf)).toEqual(
              expected.slice(Number(resume), Number(resume) + replayed.length),
            );

            coverage.add('items released', released.length);
            coverage.count(
              'a late item raised to its watermark',
              released.some((item) => item.mergeTime > item.eventTime),
            );
            coverage.count(
              'an input back after idle (a floor)',
              floors.some((f) => f.length > 0),
            );
            coverage.count('skew: 10 or more items held', seen.mostHeld >= 10);
            coverage.count('a restart in the middle', resume > 0n && resume < BigInt(end));
            coverage.count('a restart re-read items released before it', seen.skipped > 0);
            coverage.count('several inputs', inputs > 1);
          },
        ),
        PARAMETERS,
      );
      coverage.expectRates({
        'items released': 30,
        'a late item raised to its watermark': 0.7,
        'an input back after idle (a floor)': 0.4,
        'skew: 10 or more items held': 0.6,
        'a restart in the middle': 0.5,
        'a restart re-read items released before it': 0.2,
        'several inputs': 0.6,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
