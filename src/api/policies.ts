// The policies a job is built with, as the builder (`.window()`, `.onError()`) takes them.

/** What happens to a message whose event time is before the open window. */
export type LatePolicy = 'include' | 'drop' | 'side';
/** What happens to a message that cannot be decoded, keyed or reduced. */
export type ErrorPolicy = 'stop' | 'dead-letter';

/**
 * Early updates of open windows: `{ every: n }` in the result of a message that brought a
 * window's count to a multiple of n (once per window per message, after all its values), or
 * 'each-result' in every result the job publishes (for the windows that took elements since
 * their last update). A window's last output, when it closes, is its final one.
 */
export type EarlyUpdates = { readonly every: number } | 'each-result';
