/** What one round cost and what its rows waited. */
export interface Round {
  /** From the writers' start to the last row's confirm. */
  readonly wallMs: number;
  /** This process's CPU time over the same span: the relay's (the writers run in a child). */
  readonly cpuMs: number;
  /** The writers' own span, from their start to their last COMMIT's answer. */
  readonly writeMs: number;
  /** Each row's time from its COMMIT's answer to the confirm of the batch holding it, ms. */
  readonly latenciesMs: readonly number[];
  /** The relay's waits behind an open transaction (`relayMetrics`); 0 for the plain loop. */
  readonly waits: number;
  /** Those behind a transaction none of the round's writers ran: another database's, say. */
  readonly foreignWaits: number;
  /** The time the relay spent in them, ms. */
  readonly waitedMs: number;
}
