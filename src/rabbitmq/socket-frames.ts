const SIZE_PREFIX = 4;

/**
 * Cuts a socket's byte stream into stream-protocol frames (uint32 size prefix, then that
 * many bytes). A frame inside one socket read is handed over as a view of that read, not
 * copied. A frame that spans reads is copied once, into a buffer sized from its header, as
 * its parts come in; the bytes after it in the read that completes it stay views.
 */
export class FrameAssembler {
  /** The size prefix of a frame whose first bytes came at the end of a read. */
  private readonly prefix = Buffer.alloc(SIZE_PREFIX);
  private prefixBytes = 0;
  /** The frame being assembled (prefix included) and how much of it has arrived. */
  private partial: Buffer | undefined;
  private filled = 0;

  /** @param onFrame receives each whole frame, size prefix included. */
  constructor(private readonly onFrame: (frame: Buffer) => void) {}

  push(data: Buffer): void {
    let pos = this.pending() ? this.continuePartial(data) : 0;
    while (data.length - pos >= SIZE_PREFIX) {
      const end = pos + SIZE_PREFIX + data.readUInt32BE(pos);
      if (end > data.length) break;
      this.onFrame(data.subarray(pos, end));
      pos = end;
    }
    if (pos < data.length) this.continuePartial(data.subarray(pos));
  }

  /**
   * The bytes of an unfinished frame (empty when none), and forgets them: for handing the
   * socket back to a reader that assembles frames itself.
   */
  takeRest(): Buffer {
    const rest =
      this.partial !== undefined
        ? this.partial.subarray(0, this.filled)
        : Buffer.from(this.prefix.subarray(0, this.prefixBytes));
    this.partial = undefined;
    this.filled = 0;
    this.prefixBytes = 0;
    return rest;
  }

  private pending(): boolean {
    return this.partial !== undefined || this.prefixBytes > 0;
  }

  /**
   * Feeds the start of `data` to the unfinished frame (starting one when there is none);
   * returns how many bytes it took: all of them unless the frame is complete before.
   */
  private continuePartial(data: Buffer): number {
    let pos = 0;
    if (this.partial === undefined) {
      const take = Math.min(SIZE_PREFIX - this.prefixBytes, data.length);
      data.copy(this.prefix, this.prefixBytes, 0, take);
      this.prefixBytes += take;
      pos = take;
      if (this.prefixBytes < SIZE_PREFIX) return pos;
      this.partial = Buffer.allocUnsafe(SIZE_PREFIX + this.prefix.readUInt32BE(0));
      this.prefix.copy(this.partial, 0);
      this.filled = SIZE_PREFIX;
      this.prefixBytes = 0;
    }
    const take = Math.min(this.partial.length - this.filled, data.length - pos);
    data.copy(this.partial, this.filled, pos, pos + take);
    this.filled += take;
    pos += take;
    if (this.filled === this.partial.length) {
      const frame = this.partial;
      this.partial = undefined;
      this.filled = 0;
      this.onFrame(frame);
    }
    return pos;
  }
}
