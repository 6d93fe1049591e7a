import { ConfigError } from '../common/errors.js';

/** A digit a whole number of a duration may start with (any but 0, which stands alone). */
type LeadingDigit = '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9';

/**
 * The whole number of a duration's text: `0`, or digits without a leading zero. `${bigint}`
 * alone would also take '0x1f' and refuse '01'; starting with 1–9 leaves decimal digits only.
 */
type WholeNumber = '0' | (`${bigint}` & `${LeadingDigit}${string}`);

/**
 * A length of time in a window setting: a whole number with a unit, `'250ms' '30s' '1m'
 * '1h'`, or a plain number of milliseconds. Decimals are not accepted ('90m', not
 * '1.5h') so that every accepted value is an exact whole number of milliseconds. The type
 * takes the texts the parser takes ('1 minute' or '1.5h' fail to compile); a number, or a
 * value from JavaScript, is checked when the window is built.
 */
export type Duration = number | `${WholeNumber}${'ms' | 's' | 'm' | 'h'}`;

/**
 * The size of a tumbling window: a Duration, or exactly one calendar unit, a day, a week or a
 * month, in the window's time zone.
 */
export type TumblingSize = Duration | '1d' | '1w' | '1mo';

/** The calendar units a tumbling window can have; they align in a time zone. */
export type CalendarUnit = 'day' | 'week' | 'month';

/** A parsed tumbling size: a fixed length, or one calendar unit (whose length varies). */
export type WindowSize =
  | { readonly type: 'fixed'; readonly ms: number }
  | { readonly type: 'calendar'; readonly unit: CalendarUnit };

const FIXED_UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const CALENDAR_UNITS: Readonly<Record<string, CalendarUnit>> = { d: 'day', w: 'week', mo: 'month' };
const CALENDAR_SUFFIX: Readonly<Record<CalendarUnit, string>> = {
  day: 'd',
  week: 'w',
  month: 'mo',
};

// The sign is captured so that '-5s' is reported as "must be > 0", not as garbage. No leading
// zero, as the Duration type says.
const DURATION_TEXT = /^(-?(?:0|[1-9]\d*))(ms|s|m|h|d|w|mo)$/;

const FORMS =
  "a whole number (no leading zero) with a unit ms, s, m or h (e.g. '250ms', '30s', '1m', '1h') or a number of milliseconds";

/** Whether 0 is a valid value (offsets) or not (sizes, gaps). */
export type DurationMinimum = 'positive' | 'non-negative';

/** Parses a fixed duration to whole milliseconds; `parameter` names the setting in errors. */
export function parseDuration(
  parameter: string,
  value: unknown,
  minimum: DurationMinimum = 'positive',
): number {
  const parsed = parseAmount(parameter, value);
  if (parsed.unit in CALENDAR_UNITS) {
    throw new ConfigError(
      parameter,
      `must be a fixed duration (ms, s, m or h); calendar units like '1d' only size tumbling windows, use hours instead (e.g. '24h')`,
      value,
    );
  }
  return checkMilliseconds(
    parameter,
    parsed.amount * (FIXED_UNIT_MS[parsed.unit] ?? 1),
    minimum,
    value,
  );
}

/**
 * Parses a tumbling size: a fixed duration, or exactly one calendar unit `'1d' '1w' '1mo'`.
 * Multiples of calendar units are rejected: '2d' would need an arbitrary anchor (which
 * pairs of days?), and the fixed alternative ('48h', aligned to the epoch) says so plainly.
 */
export function parseWindowSize(parameter: string, value: unknown): WindowSize {
  const parsed = parseAmount(parameter, value);
  const unit = CALENDAR_UNITS[parsed.unit];
  if (unit === undefined) {
    const ms = parsed.amount * (FIXED_UNIT_MS[parsed.unit] ?? 1);
    return { type: 'fixed', ms: checkMilliseconds(parameter, ms, 'positive', value) };
  }
  if (parsed.amount <= 0) throw new ConfigError(parameter, 'must be > 0', value);
  if (parsed.amount !== 1) {
    throw new ConfigError(
      parameter,
      `with a calendar unit must be exactly one unit ('1d', '1w' or '1mo'); for longer fixed windows use hours (e.g. '48h', aligned to the epoch in UTC)`,
      value,
    );
  }
  return { type: 'calendar', unit };
}

/** Formats milliseconds in the largest unit that divides them exactly: 90000 → '90s'. */
export function formatDuration(ms: number): string {
  if (ms !== 0 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms !== 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms !== 0 && ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** Formats a window size the way `parseWindowSize` accepts it. */
export function formatWindowSize(size: WindowSize): string {
  return size.type === 'fixed' ? formatDuration(size.ms) : `1${CALENDAR_SUFFIX[size.unit]}`;
}

function parseAmount(parameter: string, value: unknown): { amount: number; unit: string } {
  if (typeof value === 'number') return { amount: value, unit: 'ms' };
  const match = typeof value === 'string' ? DURATION_TEXT.exec(value) : null;
  if (match === null) throw new ConfigError(parameter, `must be ${FORMS}`, value);
  return { amount: Number(match[1]), unit: match[2] ?? 'ms' };
}

/**
 * Event times reach ±8.64e15 ms (Date's range); a window bound is an event time plus a size
 * or gap, and must stay a safe integer (2^53 ≈ 9.007e15) to be exact and readable back.
 */
export const MAX_DURATION_MS = 1e14;

function checkMilliseconds(
  parameter: string,
  ms: number,
  minimum: DurationMinimum,
  given: unknown,
): number {
  if (!Number.isFinite(ms))
    throw new ConfigError(parameter, 'must be a finite number of milliseconds', given);
  if (!Number.isInteger(ms))
    throw new ConfigError(parameter, 'must be a whole number of milliseconds', given);
  if (ms > MAX_DURATION_MS) {
    throw new ConfigError(
      parameter,
      `must be at most ${MAX_DURATION_MS}ms (about 3,000 years), so that window bounds stay exact`,
      given,
    );
  }
  if (minimum === 'positive' ? ms <= 0 : ms < 0) {
    throw new ConfigError(
      parameter,
      minimum === 'positive' ? 'must be > 0' : 'must be >= 0',
      given,
    );
  }
  // -0 is a valid offset; normalise it so that describe() never prints '-0ms'.
  return ms === 0 ? 0 : ms;
}
