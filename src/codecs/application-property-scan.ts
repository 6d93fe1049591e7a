import { decodeAmqpValue } from './amqp-decoder.js';
import type { AmqpValue } from './amqp-value.js';
import { CodecError, hex } from './codec-error.js';
import { Code, Section } from './format-codes.js';
import { skipValue } from './message-scan.js';
import {
  readSectionDescriptor,
  readU32,
  sectionBodyOf,
  sectionCodeOf,
  sectionMayFollow,
} from './section-descriptor.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A few application properties of AMQP 1.0 messages, the others passed over: each key is
 * compared by its bytes with the names asked for, and only their values are decoded; every
 * other value is skipped by its size (`skipValue`), and the sections before are skipped the
 * same way, the body never reached. For a reader that routes on a few properties of many (a
 * job's result carries fifteen): a fraction of `decodeApplicationProperties`' cost. It checks
 * the framing and that keys are strings, not what the values it skips hold, nor that a key it
 * does not look for appears once (a name asked for twice is a CodecError).
 */
export class ApplicationPropertyScan {
  private readonly names: readonly Uint8Array[];

  constructor(names: readonly string[]) {
    const encoder = new TextEncoder();
    this.names = names.map((name) => encoder.encode(name));
  }

  /**
   * The values of the names asked for, in their order, in the message `bytes[start, end)`:
   * undefined where the message has no such property (or no application properties). Throws
   * CodecError on a malformed section before the body, its position counted from `start`.
   */
  read(bytes: Uint8Array, start = 0, end = bytes.length): (AmqpValue | undefined)[] {
    const found = new Array<AmqpValue | undefined>(this.names.length).fill(undefined);
    try {
      let pos = start;
      let previous = 0;
      while (pos < end) {
        const packed = readSectionDescriptor(bytes, pos, end);
        const code = sectionCodeOf(packed);
        if (code > Section.ApplicationProperties) break;
        if (!sectionMayFollow(previous, code)) {
          throw new CodecError(`message section ${hex(code)} may not follow ${hex(previous)}`, pos);
        }
        previous = code;
        pos = sectionBodyOf(packed);
        if (code === Section.ApplicationProperties) {
          this.readMap(bytes, pos, end, found);
          break;
        }
        pos = skipValue(bytes, pos, end, 0);
      }
      return found;
    } catch (error) {
      throw error instanceof CodecError ? error.relativeTo(start) : error;
    }
  }

  /** Fills `found` from the map at `pos`. */
  private readMap(
    bytes: Uint8Array,
    pos: number,
    end: number,
    found: (AmqpValue | undefined)[],
  ): void {
    const format = pos < end ? (bytes[pos] as number) : -1;
    if (format !== Code.Map8 && format !== Code.Map32) {
      throw new CodecError('application-properties section is not a map', pos);
    }
    const mapEnd = skipValue(bytes, pos, end, 0);
    const wide = format === Code.Map32;
    const count = wide ? readU32(bytes, pos + 5) : (bytes[pos + 2] as number);
    if (count % 2 !== 0) throw new CodecError(`map with an odd number of items (${count})`, pos);
    let at = pos + (wide ? 9 : 3);
    for (let entry = 0; entry < count; entry += 2) {
      const keyCode = at < mapEnd ? (bytes[at] as number) : -1;
      if (keyCode !== Code.Str8 && keyCode !== Code.Str32) {
        throw new CodecError('application-properties key must be a string', at);
      }
      const keyEnd = skipValue(bytes, at, mapEnd, 0);
      const keyStart = at + (keyCode === Code.Str8 ? 2 : 5);
      const valueEnd = skipValue(bytes, keyEnd, mapEnd, 0);
      const index = this.indexOf(bytes, keyStart, keyEnd);
      if (index >= 0) {
        if (found[index] !== undefined) {
          throw new CodecError('application-properties has a key twice', at);
        }
        found[index] = valueAt(bytes, keyEnd, valueEnd);
      }
      at = valueEnd;
    }
    if (at !== mapEnd) throw new CodecError("map elements end before the map's declared size", at);
  }

  /** The index of the name whose bytes are `bytes[start, end)`; -1 when none is. */
  private indexOf(bytes: Uint8Array, start: number, end: number): number {
    const length = end - start;
    for (let index = 0; index < this.names.length; index++) {
      const name = this.names[index] as Uint8Array;
      if (name.length !== length) continue;
      let same = true;
      for (let i = 0; i < length && same; i++) same = bytes[start + i] === name[i];
      if (same) return index;
    }
    return -1;
  }
}

/**
 * The value framed at `bytes[start, end)`: a string decoded at once (the properties a reader
 * routes on are), any other through the decoder.
 */
function valueAt(bytes: Uint8Array, start: number, end: number): AmqpValue {
  const code = bytes[start];
  if (code !== Code.Str8 && code !== Code.Str32) return decodeAmqpValue(bytes, start, end);
  try {
    return utf8.decode(bytes.subarray(start + (code === Code.Str8 ? 2 : 5), end));
  } catch {
    throw new CodecError('string is not valid UTF-8', start);
  }
}
