/**
 * The client's connections log through this: our adapter reports what matters as errors
 * with stream and offset, and the client's own lines would only repeat them as noise.
 */
export const silentLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
