import { createMessageScan, scanMessage } from '../../src/codecs/message-scan.js';
import type { SourceChunk } from '../../src/ports/ports.js';
import type { Reading } from '../corpus.js';

/**
 * The decoding every baseline shares with the engine: the library's scanner for the body
 * bounds and creation time, then JSON.parse of the same bytes (what bodyDecoder('json') does).
 * Baselines differ from the engine only in what they do after decoding.
 */
export class MessageDecoder {
  private readonly scan = createMessageScan();
  bytes: Buffer = Buffer.alloc(0);
  private chunk: SourceChunk | undefined;
  /** Event time of the last decoded message. */
  time = 0;

  use(chunk: SourceChunk): void {
    this.chunk = chunk;
    this.bytes = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
  }

  decode(index: number): Reading {
    const { scan, bytes } = this;
    const chunk = this.chunk as SourceChunk;
    scanMessage(bytes, chunk.starts[index] as number, chunk.ends[index] as number, scan);
    this.time = Number.isNaN(scan.creationTime) ? chunk.timestamp : scan.creationTime;
    return JSON.parse(bytes.toString('utf8', scan.bodyStart, scan.bodyEnd)) as Reading;
  }
}
