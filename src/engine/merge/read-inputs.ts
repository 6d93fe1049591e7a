import { IDLE, orIdle } from '../../ports/idle-timeout.js';
import type { Source, SourceChunk } from '../../ports/ports.js';

/** What reading several inputs at once delivers: a chunk of one of them, or its silence. */
export interface InputDelivery {
  /** The input's index, in the job's order of inputs. */
  readonly input: number;
  /** The chunk; undefined when the input delivered nothing for `idleAfterMs` (once a silence). */
  readonly chunk: SourceChunk | undefined;
}

type Delivered = { readonly input: number; readonly result: IteratorResult<SourceChunk, void> };

/**
 * Reads every input at once, one read under way per input, each from where `start(input)`
 * says (asked when it may deliver, as `Source.read` asks), and yields their chunks as they
 * come, in no set order (the merge makes any order the same). An input whose read delivered
 * nothing for `idleAfterMs` since its last chunk (or its start) is reported silent once, until
 * it delivers again: one caught up has nothing to deliver, one behind delivers at once. Ends
 * when every read ends (the signal aborted); a read that fails fails the whole, the others
 * ended first (their sources' signal aborted), so that none waits on.
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
  idleAfterMs: number | undefined,
  mayRead: (input: number) => boolean = () => true,
): AsyncGenerator<InputDelivery, void, undefined> {
  // Ended with the whole, or when it fails: the others' reads, waiting for chunks that may
  // never come, must end too before they can be left.
  const ended = new AbortController();
  const reading = AbortSignal.any([signal, ended.signal]);
  const reads = sources.map((source, input) =>
    source.read(() => start(input), reading)[Symbol.asyncIterator](),
  );
  const pending = new Map<number, Promise<Delivered>>();
  const ask = (input: number): void => {
    const read = reads[input] as AsyncIterator<SourceChunk, void>;
    pending.set(
      input,
      read.next().then((result) => ({ input, result })),
    );
  };
  const quietSince = sources.map(() => performance.now());
  const reported = sources.map(() => false);
  /** Inputs whose next chunk waits for `mayRead`. */
  const paused = new Set<number>();
  const askIfAllowed = (input: number): void => {
    if (!mayRead(input)) {
      paused.add(input);
      return;
    }
    paused.delete(input);
    quietSince[input] = performance.now();
    ask(input);
  };
  sources.forEach((_, input) => ask(input));
  try {
    for (;;) {
      for (const input of [...paused]) askIfAllowed(input);
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
    await Promise.all(reads.map((read) => leave(read)));
  }

  /** Ms until the next input not reported yet has been silent `idleAfter`; undefined: none. */
  function untilSilent(idleAfter: number): number | undefined {
    const now = performance.now();
    let least: number | undefined;
    for (const input of pending.keys()) {
      if (reported[input] === true) continue;
      const left = Math.max(0, (quietSince[input] as number) + idleAfter - now);
      least = least === undefined ? left : Math.min(least, left);
    }
    return least;
  }

  /** The inputs silent `idleAfter` now and not reported yet, in the inputs' order. */
  function silentInputs(idleAfter: number): number[] {
    const now = performance.now();
    return [...pending.keys()]
      .filter(
        (input) => reported[input] !== true && now - (quietSince[input] as number) >= idleAfter,
      )
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
