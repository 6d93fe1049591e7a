// The job over several inputs of the RabbitMQ SIGKILL test (merged-inputs-sigkill.test.ts) and
// of its child, and its inputs: three inputs of readings, one lagging the others by two windows
// in event time, one silent for five windows mid-way (in event time: its messages keep coming),
// each with disorder, late and filtered readings; a keyed tumbling window over the merge.
import type { Runner, Source, Target } from '../../../src/index.js';
import {
  WINDOW_MS,
  mergedJobOver,
  type InputMessage,
  type MergedJobSpec,
} from '../arbitraries/merged-inputs-scenario.js';
import { seededRandom } from '../arbitraries/seeded-random.js';

export const MERGED_INPUTS = 3;

/** Event time between an input's readings, ms: ten per window. */
const STEP_MS = WINDOW_MS / 10;
const BASE_TIME = Date.UTC(2026, 0, 1);

const SPEC: MergedJobSpec = {
  window: { kind: 'tumbling', grace: 200 },
  maxOutOfOrderness: 300,
  keyed: true,
  late: 'side',
  packing: { pack: 'batch' },
  early: false,
};

/**
 * The readings of input `input`, `count` of them, in offset order: the same every call. Input 1
 * lags two windows behind; input 2 jumps five windows ahead after its first third (an idle
 * stretch in event time, which holds the others' windows until they pass it).
 */
export function mergedReadings(input: number, count: number): InputMessage[] {
  const random = seededRandom(7_000 + input);
  return Array.from({ length: count }, (_, i): InputMessage => {
    const lag = input === 1 ? -2 * WINDOW_MS : 0;
    const jump = input === 2 && i >= count / 3 ? 5 * WINDOW_MS : 0;
    const roll = random();
    // Mostly within maxOutOfOrderness; one in twenty a second back: late.
    const disorder = roll < 0.05 ? -WINDOW_MS : Math.floor(roll * 250);
    const time = BASE_TIME + 2 * WINDOW_MS + lag + jump + i * STEP_MS + disorder;
    const key = ['a', 'b', 'c'][Math.floor(random() * 3)] as string;
    const value = Math.floor(random() * 201) - 100;
    return i % 13 === 12 ? { time, key, value, drop: true } : { time, key, value };
  });
}

/** The job over `sources` (the inputs in order), publishing to `target`. */
export function mergedReadingsJob(
  sources: readonly Source[],
  target: Target,
): Runner<InputMessage, number, number> {
  return mergedJobOver(sources, target, SPEC);
}
