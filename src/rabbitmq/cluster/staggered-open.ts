/**
 * How long a connection attempt to one node has to finish its handshake (TCP, peer
 * properties, SASL, tune, open) before the next node is tried beside it: far above a
 * handshake on a busy machine (5–60 ms here, a few hundred under CI's load), far below
 * `connectTimeoutMs`.
 */
export const NEXT_NODE_AFTER_MS = 500;

export interface StaggerOptions {
  /** Bound on the whole race: every attempt ends by then, won or not. */
  readonly timeoutMs: number;
  /** Delay before the next attempt starts beside those under way (default NEXT_NODE_AFTER_MS). */
  readonly staggerMs?: number;
  /** Gives up every attempt; none starts after it. */
  readonly signal?: AbortSignal | undefined;
  /** Whether an attempt's failure ends the race at once (a refusal: no node would say else). */
  readonly final: (error: unknown) => boolean;
  /** The error when every attempt failed, from their errors in candidate order. */
  readonly allFailed: (errors: readonly unknown[]) => unknown;
}

/** The race's winner, and the candidates it passed over (failed, or slower than the winner). */
export interface StaggerWin<C, T> {
  readonly winner: C;
  readonly opened: T;
  readonly passedOver: readonly C[];
}

/**
 * Opens a connection to the first of `candidates` that completes it, trying them as "happy
 * eyeballs" do (RFC 8305): in order, each started when the one before has not succeeded
 * within the stagger, or at once when it failed. A node that accepts TCP and never answers
 * (a frozen VM) thus costs the stagger, not the timeout. The first success wins; the attempts
 * still under way are aborted through their signal, and one that succeeds anyway is handed
 * to `discard`. The stagger is at most `timeoutMs` / candidates, so each one starts within
 * the bound; every attempt gets what is left of it. Nothing runs once the promise settles
 * but aborted attempts winding down.
 */
export function openStaggered<C, T>(
  candidates: readonly C[],
  open: (candidate: C, timeoutMs: number, signal: AbortSignal) => Promise<T>,
  discard: (opened: T) => void,
  options: StaggerOptions,
): Promise<StaggerWin<C, T>> {
  const { signal, final, allFailed } = options;
  // Set by the first attempt from the same clock reading as its own bound, so that it gets the
  // whole timeout (a millisecond read between the two made a 300 ms bound say 299).
  let deadline: number | undefined;
  const staggerMs = Math.min(
    options.staggerMs ?? NEXT_NODE_AFTER_MS,
    options.timeoutMs / Math.max(candidates.length, 1),
  );
  const attempts: { candidate: C; controller: AbortController; pending: boolean }[] = [];
  const errors: unknown[] = [];
  let settled = false;
  let timer: NodeJS.Timeout | undefined;

  return new Promise<StaggerWin<C, T>>((resolve, reject) => {
    const settle = (): void => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', abortAll);
      for (const attempt of attempts) if (attempt.pending) attempt.controller.abort();
    };
    // The attempts fail on their own signal; the race then ends as every one failed.
    function abortAll(): void {
      clearTimeout(timer);
      for (const attempt of attempts) attempt.controller.abort();
    }
    const startNext = (): void => {
      clearTimeout(timer);
      const index = attempts.length;
      const now = Date.now();
      deadline ??= now + options.timeoutMs;
      const left = deadline - now;
      const candidate = candidates[index];
      const givenUp = signal?.aborted === true && index > 0;
      if (candidate === undefined || left <= 0 || givenUp) {
        if (attempts.every((attempt) => !attempt.pending)) {
          settle();
          reject(allFailed(errors));
        }
        return;
      }
      const attempt = { candidate, controller: new AbortController(), pending: true };
      attempts.push(attempt);
      // Given up before it began: the one attempt fails as given up, in its own words.
      if (signal?.aborted === true) attempt.controller.abort();
      if (index + 1 < candidates.length) timer = setTimeout(startNext, staggerMs);
      open(candidate, left, attempt.controller.signal).then(
        (opened) => {
          attempt.pending = false;
          if (settled) {
            discard(opened);
            return;
          }
          settle();
          const passedOver = attempts.filter((other) => other !== attempt);
          resolve({ winner: candidate, opened, passedOver: passedOver.map((a) => a.candidate) });
        },
        (error: unknown) => {
          attempt.pending = false;
          errors[index] = error;
          if (settled) return;
          if (final(error)) {
            settle();
            reject(error);
            return;
          }
          startNext();
        },
      );
    };
    signal?.addEventListener('abort', abortAll, { once: true });
    startNext();
  });
}
