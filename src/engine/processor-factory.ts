import type { EarlyUpdates, LatePolicy } from '../api/policies.js';
import { rulesOf } from '../windows/event-time-kinds.js';
import { isEventTimeSpec, type EventTimeWindowSpec } from '../windows/event-time-spec.js';
import type { WindowSpec } from '../windows/window-spec.js';
import type { Processor } from './processor.js';
import { StepProcessor, type StepFlushing, type StepProcessorConfig } from './step-processor.js';
import { WindowOperator, type WindowOperatorConfig } from './window-operator.js';
import { MergingProcessor, type MergingConfig } from './merge/merging-processor.js';

/*
 * The one place that tells the processors apart: event-time windows (their spec says so) get
 * the window operator, over several inputs behind the merge; every other window the step
 * processor. Everything else (the runner, the resume point) sees a Processor.
 */

/**
 * A step processor's config, or for event-time windows a window operator's (with its inputs'
 * streams over several inputs).
 */
export type ProcessorConfig<T, A, R> =
  StepProcessorConfig<T, A, R> | WindowOperatorConfig<T, A, R> | MergingConfig<T, A, R>;

/** What every processor is configured with, whatever its window. */
export type CommonProcessorConfig<T, A, R> = Omit<StepProcessorConfig<T, A, R>, 'window' | 'late'>;

/** The builder's settings that depend on the window's kind. */
export interface WindowSettings {
  readonly late: LatePolicy | undefined;
  readonly maxOutOfOrderness: number | undefined;
  readonly early: EarlyUpdates | undefined;
}

/**
 * What the builder checks of a job's window, answered by the processor the window gets and,
 * for event-time windows, by its kind (../windows/event-time-kinds.ts): the builder never
 * asks which processor or kind it is.
 */
export interface WindowRules {
  /** A message can be late for its window: a late policy applies. */
  readonly lateMessages: boolean;
  /**
   * A late message can still join a window to be published (step windows): late policy
   * 'include' applies. An event-time window's late messages belong to windows already published.
   */
  readonly includesLate: boolean;
  /** The watermark closes the windows: maxOutOfOrderness applies. */
  readonly closedByWatermark: boolean;
  /** The processor keeps a watermark: a job's definition records how far it trails. */
  readonly watermark: boolean;
  /** Open windows can publish early updates: `.emit()` applies. */
  readonly earlyUpdates: boolean;
  /**
   * A restart reads recovery state from the result format's properties: a job's own `encode`,
   * whose messages would not carry it, is refused.
   */
  readonly recoversFromResults: boolean;
  /** Windows merge: the aggregate must give `merge`. */
  readonly mergesWindows: boolean;
}

/** What the processor `window` gets, and its kind, take and need (see WindowRules). */
export function windowRules(window: WindowSpec | EventTimeWindowSpec): WindowRules {
  if (!isEventTimeSpec(window)) {
    return {
      lateMessages: window.hasEventTimeBounds,
      includesLate: true,
      closedByWatermark: false,
      watermark: false,
      earlyUpdates: false,
      recoversFromResults: false,
      mergesWindows: false,
    };
  }
  const kind = rulesOf(window.assignment);
  return {
    lateMessages: kind.closedByWatermark,
    includesLate: false,
    closedByWatermark: kind.closedByWatermark,
    watermark: true,
    earlyUpdates: true,
    recoversFromResults: true,
    mergesWindows: kind.mergesWindows,
  };
}

/**
 * The config of the processor `window` needs, with the defaults of its kind; `merged`: the
 * inputs of a job over several inputs (its window an event-time one, the builder checks).
 */
export function processorConfig<T, A, R>(
  common: CommonProcessorConfig<T, A, R>,
  window: WindowSpec | EventTimeWindowSpec,
  settings: WindowSettings,
  merged?: Pick<MergingConfig<T, A, R>, 'inputs' | 'inputValues'>,
): ProcessorConfig<T, A, R> {
  if (!isEventTimeSpec(window)) return { ...common, window, late: settings.late ?? 'side' };
  return {
    ...common,
    window,
    late: settings.late === 'drop' ? 'drop' : 'side',
    maxOutOfOrderness: settings.maxOutOfOrderness ?? 0,
    early: settings.early,
    ...merged,
  };
}

/** A fresh processor for a (re)start; `flushing` concerns the step processor only. */
export function createProcessor<T, A, R>(
  config: ProcessorConfig<T, A, R>,
  flushing: StepFlushing,
): Processor<R> {
  if (!isOperatorConfig(config)) return new StepProcessor(config, flushing);
  return 'inputs' in config ? new MergingProcessor(config) : new WindowOperator(config);
}

function isOperatorConfig<T, A, R>(
  config: ProcessorConfig<T, A, R>,
): config is WindowOperatorConfig<T, A, R> {
  return isEventTimeSpec(config.window);
}
