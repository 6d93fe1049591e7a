import { IDLE, orIdle } from '../ports/idle-timeout.js';
import type { Source } from '../ports/ports.js';

/** Why a scrape has no end offset this time. */
export type NoEndOffset = 'timeout' | 'error';

/**
 * The source's end offset as a scrape asks it: bounded, cached, one question at a time. On
 * RabbitMQ `endOffset()` opens connections (stream stats, then a subscription to the last
 * chunk), so a scrape must neither wait for a slow broker without bound nor pile questions up:
 * an answer younger than `maxAgeMs` is reused, a scrape joins a question already under way,
 * and one that waits more than `timeoutMs` goes on without it (the question keeps running,
 * and its answer serves the next scrape if it is still young enough then).
 */
export class SourceEndProbe {
  private answer: { readonly end: bigint; readonly at: number } | undefined;
  private asking: Promise<bigint | 'error'> | undefined;

  constructor(
    private readonly source: Pick<Source, 'endOffset'>,
    private readonly timeoutMs: number,
    private readonly maxAgeMs: number,
  ) {}

  async end(): Promise<bigint | NoEndOffset> {
    const { answer } = this;
    if (answer !== undefined && performance.now() - answer.at < this.maxAgeMs) return answer.end;
    if (this.asking === undefined) {
      const asking = this.ask();
      this.asking = asking;
      // Cleared once settled, whether or not a scrape still waits for it.
      void asking.then(() => {
        if (this.asking === asking) this.asking = undefined;
      });
    }
    return within(this.asking, this.timeoutMs);
  }

  /** Never rejects: a failed question is an answer of its own, so nothing goes unhandled. */
  private async ask(): Promise<bigint | 'error'> {
    try {
      const end = await this.source.endOffset();
      this.answer = { end, at: performance.now() };
      return end;
    } catch {
      return 'error';
    }
  }
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  const settled = await orIdle(promise, ms);
  return settled === IDLE ? 'timeout' : settled;
}
