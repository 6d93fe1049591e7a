import { ConfigError } from '../common/errors.js';
import type { AlignedAssignment } from './aligned-windows.js';
import { formatDuration, parseDuration, type Duration } from './duration.js';
import type { AlignedAssigner, EventTimeWindowSpec } from './event-time-spec.js';
import { parseGrace } from './grace.js';
import { alignedStart } from './tumbling-assigner.js';

/** The options of `hopping(size, advance, options)`: the grace and where windows start. */
export interface HoppingOptions {
  /** How long after its end a window still takes late elements (no default: 0 for none). */
  readonly grace: Duration;
  /** Shifts where windows start, from the epoch: 0 <= offset < advance (default 0). */
  readonly offset?: Duration;
}

/**
 * Windows one element of a hopping window may belong to: each is updated per element, so the
 * ratio size / advance is the per-message cost (Flink and Kafka Streams leave it unbounded;
 * '1000d' every '1ms' would be 8.64e10 windows per message).
 */
export const MAX_HOPPING_WINDOWS_PER_ELEMENT = 1000;

/** A validated hopping window configuration; build it with `hopping()`. */
export class HoppingSpec implements EventTimeWindowSpec {
  readonly kind = 'hopping';
  readonly assignment: AlignedAssignment;

  constructor(
    readonly size: number,
    readonly advance: number,
    readonly offset: number,
    readonly grace: number,
  ) {
    this.assignment = {
      type: 'aligned',
      grace,
      createAssigner: () => new HoppingAssigner(size, advance, offset),
    };
  }

  describe(): string {
    const settings = [formatDuration(this.size), `advance=${formatDuration(this.advance)}`];
    if (this.offset !== 0) settings.push(`offset=${formatDuration(this.offset)}`);
    settings.push(`grace=${formatDuration(this.grace)}`);
    return `${this.kind}(${settings.join(', ')})`;
  }
}

/**
 * Hopping windows (Kafka Streams' hopping, Flink's sliding): windows of `size` starting every
 * `advance`, so that an element belongs to about size / advance of them (exactly that many
 * when advance divides size). Event-time windows: each closes when the watermark passes its
 * end + grace. Fixed sizes only, aligned to the epoch plus `offset`.
 */
export function hopping(size: Duration, advance: Duration, options: HoppingOptions): HoppingSpec {
  // A JavaScript caller may leave out the options: say which one is required, not a TypeError.
  if (typeof (options as unknown) !== 'object' || (options as unknown) === null) {
    throw new ConfigError('hopping options', 'must be an object with grace (required)', options);
  }
  const sizeMs = parseDuration('hopping size', size);
  const advanceMs = parseDuration('hopping advance', advance);
  if (advanceMs > sizeMs) {
    throw new ConfigError(
      'hopping advance',
      `must be at most the size (${formatDuration(sizeMs)}); a larger advance would leave gaps no window covers`,
      advance,
    );
  }
  const windowsPerElement = Math.ceil(sizeMs / advanceMs);
  if (windowsPerElement > MAX_HOPPING_WINDOWS_PER_ELEMENT) {
    throw new ConfigError(
      'hopping advance',
      `must give each element at most ${MAX_HOPPING_WINDOWS_PER_ELEMENT} windows (size / advance, rounded up); ` +
        `${formatDuration(sizeMs)} / ${formatDuration(advanceMs)} gives ${windowsPerElement}`,
      advance,
    );
  }
  const grace = parseGrace('hopping grace', options.grace);
  const offset = parseDuration('hopping offset', options.offset ?? 0, 'non-negative');
  if (offset >= advanceMs) {
    throw new ConfigError(
      'hopping offset',
      `must be less than the advance (${formatDuration(advanceMs)})`,
      options.offset,
    );
  }
  return new HoppingSpec(sizeMs, advanceMs, offset, grace);
}

class HoppingAssigner implements AlignedAssigner {
  constructor(
    private readonly size: number,
    private readonly advance: number,
    private readonly offset: number,
  ) {}

  assign(eventTime: number, starts: number[], ends: number[]): void {
    const latest = alignedStart(eventTime, this.advance, this.offset);
    let first = latest;
    while (first - this.advance > eventTime - this.size) first -= this.advance;
    for (let start = first; start <= latest; start += this.advance) {
      starts.push(start);
      ends.push(start + this.size);
    }
  }
}
