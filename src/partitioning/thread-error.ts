// Errors across worker threads: structured cloning keeps an Error's message and stack but
// not its class, name or fields, so an error crosses as a plain record and is rebuilt.

/** What crosses the thread boundary for an error. */
export interface CrossedError {
  readonly crossedError: true;
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  readonly code: unknown;
}

/** `error` as it can cross: an Error as a record of its name, message, stack and code. */
export function toThread(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { name, message, stack } = error;
  const code = (error as { code?: unknown }).code;
  return { crossedError: true, name, message, stack, code } satisfies CrossedError;
}

/** What `toThread` sent, back as an Error with that name, message, stack and code. */
export function fromThread(value: unknown): unknown {
  if ((value as Partial<CrossedError> | null)?.crossedError !== true) return value;
  const { name, message, stack, code } = value as CrossedError;
  return Object.assign(new Error(message), { name, stack }, code === undefined ? {} : { code });
}

/** A job event with its `error` (restart, stopped) made to cross, or rebuilt after it did. */
export function withError<E extends object>(event: E, convert: (error: unknown) => unknown): E {
  return 'error' in event && event.error !== undefined
    ? { ...event, error: convert(event.error) }
    : event;
}
