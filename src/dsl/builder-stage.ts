// The order rules of the source and window stages, as types: a `PipelineBuilder<T, S>` records
// in `S` whether `.eventTime()` or `.key()` was called and whether a window was chosen, and a
// method that must come before either takes a `this` of the stage it needs. A call out of order
// then fails to compile, naming both stages ("The 'this' context of type
// 'PipelineBuilder<Reading, WindowChosen>' is not assignable to method's 'this' of type
// 'PipelineBuilder<Reading, NoWindowYet>'"), as Kafka Streams' KStream and TimeWindowedKStream
// differ in their methods. The builder checks the same rules when it runs, for JavaScript callers.

/**
 * What a builder's type records of the calls made so far (see `PipelineBuilder`): each a fact
 * that holds once set. The stages below carry only the facts set; one that leaves a fact out
 * does not know it (a variable typed with an earlier stage, then given a later one), and takes
 * the calls it would forbid.
 */
export interface BuilderStage {
  /** 'set' once `.eventTime()` or `.key()` was called: they read what the stages before give. */
  readonly eventTimeOrKey?: 'set' | 'not set';
  /** 'chosen' once a window method was called (`.tumbling()`, `.count()`, ...): a job has one. */
  readonly window?: 'chosen' | 'not chosen';
  /**
   * 'several' for a job over several inputs (`aggregate(mergeInputs([...]))`): its window must be
   * an event-time one closed by the watermark, the merge orders their messages by event time.
   */
  readonly inputs?: 'one' | 'several';
}

/** What `aggregate(mergeInputs([...]))` returns: several inputs, nothing else set. */
export interface SeveralInputs {
  readonly inputs: 'several';
}

/** Several inputs, after `.eventTime()` or `.key()`. */
export interface SeveralInputsEventTimeOrKeySet {
  readonly inputs: 'several';
  readonly eventTimeOrKey: 'set';
}

/** After `.eventTime()` or `.key()`: `.decode()`, `.filter()`, `.map()` no longer apply. */
export interface EventTimeOrKeySet {
  readonly eventTimeOrKey: 'set';
}

/** After a window method: no second window, no `.compact()`, no `.transform()`. */
export interface WindowChosen {
  readonly window: 'chosen';
}

/** After both `.eventTime()` or `.key()` and a window method. */
export interface EventTimeOrKeySetAndWindowChosen {
  readonly eventTimeOrKey: 'set';
  readonly window: 'chosen';
}

/** What `.decode()`, `.filter()` and `.map()` need: no `.eventTime()` or `.key()` yet. */
export interface BeforeEventTimeAndKey extends BuilderStage {
  readonly eventTimeOrKey?: 'not set';
}

/** What an event-time window method needs: no window chosen yet. */
export interface NoWindowYet extends BuilderStage {
  readonly window?: 'not chosen';
}

/**
 * What a step or count window, and `.compact()`, need: no window chosen yet, over one input (a
 * window of contiguous offsets has no meaning over a merge by event time).
 */
export interface NoWindowYetOneInput extends BuilderStage {
  readonly window?: 'not chosen';
  readonly inputs?: 'one';
}

/** What `.transform()` needs: neither `.eventTime()` nor `.key()`, nor a window; one input. */
export interface BeforeEventTimeKeyAndWindow extends BuilderStage {
  readonly eventTimeOrKey?: 'not set';
  readonly window?: 'not chosen';
  readonly inputs?: 'one';
}

/**
 * Whether `S` is `any`: the stage of a builder whose type records no call (`aggregate()`'s,
 * or a variable's typed `PipelineBuilder<T>`), which takes every call.
 */
type Untracked<S> = 0 extends 1 & S ? true : false;

/** The stage after `.eventTime()` or `.key()` (once a window is chosen, its inputs no longer matter). */
export type AfterEventTimeOrKey<S extends BuilderStage> =
  Untracked<S> extends true
    ? EventTimeOrKeySet
    : S extends WindowChosen
      ? EventTimeOrKeySetAndWindowChosen
      : S extends SeveralInputs
        ? SeveralInputsEventTimeOrKeySet
        : EventTimeOrKeySet;

/** The stage after a window method. */
export type AfterWindow<S extends BuilderStage> =
  Untracked<S> extends true
    ? WindowChosen
    : S extends EventTimeOrKeySet
      ? EventTimeOrKeySetAndWindowChosen
      : WindowChosen;
