import { isClosed } from './event-time-spec.js';
import type { KeyedWindows, WindowId } from './keyed-windows.js';
import type { Watermark } from './watermark.js';

/**
 * When time windows fire (Flink's EventTimeTrigger): when the watermark passes their end plus
 * the grace. The windows a kind files with `KeyedWindows.schedule` are the ones it closes.
 */
export class WatermarkTrigger<A> {
  /** The watermark `isDue` compares with, set per message: the closure is made once. */
  private due = Number.NEGATIVE_INFINITY;
  private readonly isDue = (end: number): boolean => isClosed(end, this.grace, this.due);

  constructor(
    private readonly grace: number,
    private readonly watermark: Watermark,
    private readonly windows: KeyedWindows<A>,
  ) {}

  /** Puts into `into` (empty) the windows the watermark has closed, in the closing order. */
  closeDue(into: WindowId[]): void {
    this.due = this.watermark.value;
    this.windows.closedBy(this.isDue, into);
  }
}
