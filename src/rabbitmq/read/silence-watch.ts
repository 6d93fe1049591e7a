/** Checks per `stallMs`: the detection comes at most two checks late. */
const CHECKS_PER_BOUND = 20;

/** What a watch does about a silent connection. */
export interface SilenceHandlers {
  /** Sends the node a request it answers at once (the answer, like any byte, is heard). */
  readonly probe: () => void;
  /** Nothing heard since the probe: the node answers nothing. Called once; the watch stops. */
  readonly stalled: (silentMs: number) => void;
}

/**
 * Tells a reader that its node went silent. A frozen node (SIGSTOP, a hung VM, a stalled
 * disk) keeps its TCP connections open and sends nothing: no chunk, no heartbeat, no close.
 * The client notices after two missed heartbeats (60 s each by default), and a reader waits
 * that long, while a target drops its connection at its confirm deadline.
 *
 * A reader hears nothing from a live node either while its stream is quiet, so silence alone
 * proves nothing: after `stallMs / 2` without a byte the watch asks the node something
 * (`probe`), and only when a further `stallMs / 2` passes without a byte (neither the answer
 * nor a chunk) is the node taken as stalled. A quiet stream on a live node answers every
 * probe and is never taken as stalled; an event loop kept busy past the bound is not either,
 * as the probe goes out only once it runs again. So a frozen node is noticed between
 * `stallMs` and `stallMs` plus two checks (a tenth of it) after its last byte.
 */
export class SilenceWatch {
  private lastHeard = Date.now();
  /** When the probe went out; undefined until the silence calls for one. */
  private probedAt: number | undefined;
  private stopped = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly stallMs: number,
    private readonly on: SilenceHandlers,
  ) {
    this.timer = setInterval(() => this.check(), Math.max(1, stallMs / CHECKS_PER_BOUND));
  }

  /** Something came from the node (bytes of any frame). */
  heard(): void {
    this.lastHeard = Date.now();
    this.probedAt = undefined;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private check(): void {
    // After the poll phase: bytes that waited while the event loop was busy are heard first.
    setImmediate(() => {
      if (this.stopped) return;
      const now = Date.now();
      if (this.probedAt === undefined) {
        if (now - this.lastHeard < this.stallMs / 2) return;
        this.probedAt = now;
        this.on.probe();
        return;
      }
      if (now - this.probedAt < this.stallMs / 2) return;
      this.stop();
      this.on.stalled(now - this.lastHeard);
    });
  }
}
