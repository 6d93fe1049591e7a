import { createMessageScan, scanMessage } from '../codecs/message-scan.js';
import { MultiSectionMessageError } from '../common/errors.js';
import { decodeFailure, decodeResult } from '../result-format/result-decoder.js';
import { bodyDecoder, type ValueFormat } from '../api/value-decoder.js';

/**
 * How a sink decodes a message: a body format as a job's `.decode()` takes (default 'json'),
 * or 'result' for a job's result message (`decodeResult`: read a job's target).
 */
export type SinkFormat<V> = ValueFormat<V> | 'result';

/** The value a message of `format` gives; throws for a message that does not decode. */
export function messageDecoder<V>(format: SinkFormat<V>): (bytes: Uint8Array) => V {
  if (format === 'result') return (bytes) => decodeResult(bytes) as V;
  const decode = bodyDecoder(format);
  const scan = createMessageScan();
  return (bytes) => {
    scanMessage(bytes, 0, bytes.length, scan);
    // One value per message, as a job reads it: never the first section of several, silently.
    if (scan.dataSections > 1) throw new MultiSectionMessageError(scan.dataSections);
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    try {
      return decode(buffer, scan.bodyStart, scan.bodyEnd) as V;
    } catch (cause) {
      throw decodeFailure(cause, bytes, 'sink');
    }
  };
}
