import { plainEntriesFit } from '../ports/write-size.js';
import type { RelayTarget } from './relay-destination.js';

/** Rows per Publish frame at most: the broker target's default bound on writes in flight. */
const ROWS_PER_FRAME = 64;

/**
 * What one batch of a relay sends to one target: each message under its own publishing id,
 * gathered in Publish frames of at most 64 messages that fit one write (`publishEach`; one
 * publish each on a target without it), each frame sent once full, in order.
 */
export class RelayFrames {
  /** The confirm of every message sent so far, in order. */
  readonly confirms: Promise<void>[] = [];
  private frame: { publishingId: bigint; message: Uint8Array }[] = [];
  /** The lengths of `frame`'s messages, as `plainEntriesFit` takes them. */
  private lengths: number[] = [];

  constructor(
    readonly target: RelayTarget,
    /** Called with each confirm as it is sent; what it returns is kept in `confirms`. */
    private readonly track: (confirm: Promise<void>) => Promise<void>,
  ) {}

  /** Adds a message (one that fits a write by itself), sending the frame first when it is full. */
  add(publishingId: bigint, message: Uint8Array): void {
    this.lengths.push(message.length);
    if (
      this.frame.length === ROWS_PER_FRAME ||
      !plainEntriesFit(this.lengths, this.target.maxWriteBytes)
    ) {
      this.send();
      this.lengths.push(message.length);
    }
    this.frame.push({ publishingId, message });
  }

  /** Sends the frame gathered so far, if any. */
  send(): void {
    const entries = this.frame;
    if (entries.length === 0) return;
    this.frame = [];
    this.lengths = [];
    const sent =
      this.target.publishEach?.(entries) ??
      entries.map((entry) => this.target.publish(entry.publishingId, [entry.message]));
    for (const confirm of sent) this.confirms.push(this.track(confirm));
  }
}
