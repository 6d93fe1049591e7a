/**
 * Confirms held back per stream, as a slow broker or network holds them: a write is stored
 * when published, as always, and its confirm comes once the hold is released. For testing
 * what waits on confirms (a producer's `maxInFlight`, a job's pipelined publishes).
 */
export class ConfirmHolds {
  private readonly held = new Map<
    string,
    { readonly released: Promise<void>; readonly release: () => void }
  >();

  /** Holds `stream`'s confirms from now on; the function releases them (again: nothing). */
  hold(stream: string): () => void {
    const existing = this.held.get(stream);
    if (existing !== undefined) return existing.release;
    let resolve = (): void => {};
    const released = new Promise<void>((done) => (resolve = done));
    const release = (): void => {
      if (this.held.get(stream)?.released === released) this.held.delete(stream);
      resolve();
    };
    this.held.set(stream, { released, release });
    return release;
  }

  /** Resolves once `stream`'s confirms are not held (at once when they are not). */
  async released(stream: string): Promise<void> {
    await this.held.get(stream)?.released;
  }
}
