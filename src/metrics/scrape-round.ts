/**
 * One question per scrape for several metrics that need its answer. A registry asks every
 * metric's collect at once, so the first to ask starts the round and the others join it; the
 * next scrape starts a new one.
 */
export class ScrapeRound {
  private round: Promise<void> | undefined;

  constructor(private readonly work: () => Promise<void>) {}

  /** The round under way, or a new one. */
  join(): Promise<void> {
    if (this.round === undefined) {
      const round = this.work();
      this.round = round;
      const over = (): void => {
        if (this.round === round) this.round = undefined;
      };
      // Both ways: a derived promise left rejected would be an unhandled rejection.
      round.then(over, over);
    }
    return this.round;
  }
}
