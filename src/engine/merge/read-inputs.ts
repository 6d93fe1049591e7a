import { IDLE, orIdle } from '../../ports/idle-timeout.js';
import type { GroupObserver, Source, SourceChunk } from '../../ports/ports.js';

/** What reading several inputs at once delivers: a chunk of one of them, or its silence. */
export interface InputDelivery {
  /** The input's index, in the job's order of inputs. */
  readonly input: number;
  /** The chunk; undefined when the input delivered nothing for `idleAfterMs` (once a silence). */
  readonly chunk: SourceChunk | undefined;
}

type Delivered = { readonly input: number; readonly result: IteratorResult<SourceChunk, void> };

/** How `readInputs` reads besides its inputs and their starts. */
export interface ReadInputsOptions {
  /**
   * Wall-clock ms an input's read may deliver nothing, once started, before it is reported
   * silent; undefined: never.
   */
  readonly idleAfterMs: number | undefined;
  /** Whether an input may deliver its next chunk (`maxBufferedPerInput`); default always. */
  readonly mayRead?: (input: number) => boolean;
  /** Told when an input's read begins (`waits` true) and ends waiting for `mayRead`. */
  readonly waits?: (input: number, waits: boolean) => void;
  /** Told when the first input, read in a consumer group, stands by in it. */
  readonly group?: GroupObserver;
}

/**
 * Reads every input at once, one read under way per input, each from where `start(input)`
 * says (asked when it may deliver, as `Source.read` asks), and yields their chunks as they
 * come, in no set order (the merge makes any order the same). An input whose read delivered
 * nothing for `idleAfterMs` since its last chunk (or its start) is reported silent once, until
 * it delivers again: one caught up has nothing to deliver, one behind delivers at once. Ends
 * when every read ends (the signal aborted); a read that fails fails the whole, the others
 * ended first (their sources' signal aborted), so that none waits on.
 *
 * A first input read in a single active consumer group (`Source.group`) elects the instance
 * that reads them all: the other inputs are started only once it is activated, from the
 * resume point read then, and none is silent before. Its own read ends with `signal` alone: a
 * step-down is answered once the caller has let its confirms land and aborted `signal`.
 *
 * An input's next chunk is asked for only while `mayRead(input)` holds, checked once the chunk
 * before was handled: an input far ahead of the others waits, its read paused (the source's
 * credit then holds the broker's chunks back too), until they catch up; the wait is not
 * silence. Whatever it answers, the readers must be able to move the others on.
 */
export async function* readInputs(
  sources: readonly Source[],
  start: (input: number) => Promise<bigint | 'first'>,
  signal: AbortSignal,
  options: ReadInputsOptions,
): AsyncGenerator<InputDelivery, void, undefined> {
  const { idleAfterMs, mayRead = () => true } = options;
  const leader = sources[0]?.group !== undefined ? 0 : undefined;
  // Ended with the whole, or when it fails: the others' reads, waiting for chunks that may
  // never come, must end too before they can be left.
  const ended = new AbortController();
  const reading = AbortSignal.any([signal, ended.signal]);
  let activated: () => void = () => undefined;
  const activation = new Promise<void>((resolve) => (activated = resolve));
  /** Since when each started input has delivered nothing; undefined until it starts. */
  const quietSince: (number | undefined)[] = sources.map(() => undefined);
  const startOf = async (input: number): Promise<bigint | 'first'> => {
    if (leader !== undefined && input !== leader) {
      await untilActivated(activation, reading);
      // Given up before the leader was activated: the read ends on the signal, reading nothing.
      if (reading.aborted) return 'first';
    }
    const from = await start(input);
    if (input === leader) activated();
    quietSince[input] = performance.now();
    return from;
  };
  const reads = sources.map((source, input) =>
    input === leader
      ? source.read(() => startOf(input), signal, options.group)[Symbol.asyncIterator]()
      : source.read(() => startOf(input), reading)[Symbol.asyncIterator](),
  );
  const pending = new Map<number, Promise<Delivered>>();
  const ask = (input: number): void => {
    const read = reads[input] as AsyncIterator<SourceChunk, void>;
    pending.set(
      input,
      read.next().then((result) => ({ input, result })),
    );
  };
  const reported = sources.map(() => false);
  /** Inputs whose next chunk waits for `mayRead`. */
  const paused = new Set<number>();
  const askIfAllowed = (input: number): void => {
    if (!mayRead(input)) {
      if (!paused.has(input)) options.waits?.(input, true);
      paused.add(input);
      return;
    }
    if (paused.delete(input)) options.waits?.(input, false);
    quietSince[input] = performance.now();
    ask(input);
  };
  sources.forEach((_, input) => ask(input));
  try {
    for (;;) {
      if (paused.size > 0) for (const input of [...paused]) askIfAllowed(input);
      if (pending.size === 0) break;
      const next = Promise.race(pending.values());
      const silence = idleAfterMs === undefined ? undefined : untilSilent(idleAfterMs);
      const delivered = silence === undefined ? await next : await orIdle(next, silence);
      if (delivered === IDLE) {
        for (const input of silentInputs(idleAfterMs as number)) {
          reported[input] = true;
          yield { input, chunk: undefined };
        }
        continue;
      }
      const { input, result } = delivered;
      pending.delete(input);
      if (result.done === true) continue;
      reported[input] = false;
      yield { input, chunk: result.value };
      askIfAllowed(input);
    }
  } finally {
    // Left early (the job stopped, or a read failed): every read is let go, its end unheard.
    ended.abort();
    for (const read of pending.values()) read.catch(() => undefined);
    // The leader's read, still waiting for a chunk, ends when the caller aborts `signal`, after
    // its confirms landed (Source.read): waiting for it here would wait for ever.
    const leaderWaits = leader !== undefined && pending.has(leader) && !signal.aborted;
    const leaving = reads.map((read) => leave(read));
    await Promise.all(leaderWaits ? leaving.filter((_, input) => input !== leader) : leaving);
  }

  /** Ms until the next input not reported yet has been silent `idleAfter`; undefined: none. */
  function untilSilent(idleAfter: number): number | undefined {
    const now = performance.now();
    let least: number | undefined;
    for (const input of pending.keys()) {
      const since = quietSince[input];
      if (reported[input] === true || since === undefined) continue;
      const left = Math.max(0, since + idleAfter - now);
      least = least === undefined ? left : Math.min(least, left);
    }
    return least;
  }

  /** The inputs silent `idleAfter` now and not reported yet, in the inputs' order. */
  function silentInputs(idleAfter: number): number[] {
    const now = performance.now();
    return [...pending.keys()]
      .filter((input) => {
        const since = quietSince[input];
        return reported[input] !== true && since !== undefined && now - since >= idleAfter;
      })
      .sort((a, b) => a - b);
  }
}

/** Ends a read left early; how it ends is nobody's concern any more. */
async function leave(read: AsyncIterator<SourceChunk>): Promise<void> {
  try {
    await read.return?.();
  } catch {
    // The read failed or was aborted: it is over either way.
  }
}

/** Resolves once `activation` does, or `signal` aborts. */
function untilActivated(activation: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void activation.then(done);
  });
}
