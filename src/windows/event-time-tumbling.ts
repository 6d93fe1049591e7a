import type { AlignedAssignment } from './aligned-windows.js';
import { formatDuration } from './duration.js';
import type { AlignedAssigner, EventTimeWindowSpec } from './event-time-spec.js';
import type { TumblingSpec } from './tumbling.js';
import { probeWindows, type Probed, type WindowProbe } from './window-probe.js';

/**
 * Tumbling windows closed by the watermark: `tumbling(size, { grace })`. The windows are those
 * of the step tumbling window with the same size and alignment; what differs is when they end
 * (the watermark passing end + grace, not the first element of a later window), so several
 * may be open at once, one set per key.
 */
export class EventTimeTumblingSpec implements EventTimeWindowSpec, Probed {
  readonly kind = 'tumbling';
  readonly assignment: AlignedAssignment;

  constructor(
    /** The size and alignment of the windows. */
    readonly windows: TumblingSpec,
    readonly grace: number,
  ) {
    this.assignment = {
      type: 'aligned',
      grace,
      createAssigner: () => tumblingAssigner(windows),
    };
  }

  describe(): string {
    return `${this.kind}(${this.windows.describeSettings()}, grace=${formatDuration(this.grace)})`;
  }

  // Its assigner's windows, and calendar ones are probed as such.
  [probeWindows](): WindowProbe {
    const assigner = tumblingAssigner(this.windows);
    return {
      windowsOf: (time, starts, ends) => assigner.assign(time, starts, ends),
      calendar: this.windows[probeWindows]().calendar,
    };
  }
}

function tumblingAssigner(windows: TumblingSpec): AlignedAssigner {
  const bounds = windows.createAssigner();
  return {
    assign(eventTime, starts, ends) {
      // Only for a time outside the last window: a calendar size's `open` builds zoned dates
      // (about 87 µs), meant for once a window, not once a message. NaN bounds (none opened
      // yet) hold no time.
      if (!(eventTime >= bounds.start && eventTime < bounds.end)) bounds.open(eventTime);
      starts.push(bounds.start);
      ends.push(bounds.end);
    },
  };
}
