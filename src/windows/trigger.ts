/**
 * When does a step fire (Flink's Trigger), apart from an element that belongs to a later
 * window: asked after each element has been added to the step.
 */
export const enum TriggerResult {
  Continue = 0,
  /** Emit the step including this element, then start an empty one. */
  FireAndPurge = 1,
}

/** Decides when a window's step fires: the part of a `WindowSpec` that counts elements. */
export interface Trigger {
  /** Asked after each element joined the step: whether the step fires with it. */
  onElement(): TriggerResult;
  /** Forgets the fired step. */
  clear(): void;
}

/** The trigger of window kinds whose steps end only when a later window starts. */
export const neverTrigger: Trigger = {
  onElement: () => TriggerResult.Continue,
  clear: () => undefined,
};
