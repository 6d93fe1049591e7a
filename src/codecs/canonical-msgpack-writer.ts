/**
 * Canonical msgpack written piece by piece into one reused buffer: the bytes of
 * `encodeCanonical` (canonical-msgpack.ts), without its cost per map. The generic encoder
 * lists and sorts every map's keys and encodes each key's UTF-8 anew; a writer of maps whose
 * keys it knows writes them in their canonical order from bytes encoded once (`preEncoded`).
 * Numbers, booleans, null and ASCII strings are written inline by the encoder's own rules;
 * every other value (objects, arrays, bigints, dates, non-ASCII strings) goes through
 * `encodeCanonicalAt` and its bytes are copied in, so its checks and bytes stay the encoder's.
 */
import { encodeCanonicalAt } from './canonical-msgpack.js';

/** A map key's encoded bytes, made once by `preEncoded`. */
export type PreEncoded = Uint8Array & { readonly __mapKey: true };

/** The encoded bytes of the string `name` as a map key. */
export function preEncoded(name: string): PreEncoded {
  return encodeCanonicalAt(name, 1) as PreEncoded;
}

/** The buffer grows to the largest value written and is kept, as the encoder keeps its own. */
const INITIAL_BYTES = 64 * 1024;
/** Room for any one inline value: a type byte and 8 bytes. */
const INLINE_BYTES = 9;

export class CanonicalMsgpackWriter {
  private bytes = new Uint8Array(INITIAL_BYTES);
  private view = new DataView(this.bytes.buffer);
  private length = 0;

  /** Starts a value over, dropping what a value that failed to encode left written. */
  start(): void {
    this.length = 0;
  }

  /** Array header of `size` elements (fixarray, array 16 or array 32). */
  arrayHeader(size: number): void {
    this.header(size, 0x90, 0xdc);
  }

  /** Map header of `size` pairs (fixmap, map 16 or map 32). */
  mapHeader(size: number): void {
    this.header(size, 0x80, 0xde);
  }

  /** Byte by byte: `set` of a few bytes costs more than the loop. */
  preEncoded(text: PreEncoded): void {
    this.reserve(text.length);
    const { bytes } = this;
    let at = this.length;
    for (let index = 0; index < text.length; index++) bytes[at++] = text[index] as number;
    this.length = at;
  }

  /**
   * `value` as `encodeCanonical` writes it at `depth` (1 for a whole value); undefined is nil,
   * as the encoder writes it outside a map (a map's writer leaves its key out instead).
   */
  value(value: unknown, depth: number): void {
    if (typeof value === 'number') this.number(value);
    else if (typeof value === 'string' && isAscii(value)) this.ascii(value);
    else if (value === null || value === undefined) this.byte(0xc0);
    else if (typeof value === 'boolean') this.byte(value ? 0xc3 : 0xc2);
    else this.copy(encodeCanonicalAt(value, depth));
  }

  /** How many bytes were written since `start`. */
  get size(): number {
    return this.length;
  }

  /** The bytes written since `start`, copied out. */
  finish(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }

  /** The encoder's rules: safe integers from -2^31 to 2^32 - 1 as ints, others float64. */
  private number(value: number): void {
    this.reserve(INLINE_BYTES);
    const { view } = this;
    const at = this.length;
    if (Number.isSafeInteger(value) && value >= -0x80000000 && value < 0x100000000) {
      if (value >= 0) {
        if (value < 0x80) {
          view.setUint8(at, value);
          this.length += 1;
        } else if (value < 0x100) {
          view.setUint8(at, 0xcc);
          view.setUint8(at + 1, value);
          this.length += 2;
        } else if (value < 0x10000) {
          view.setUint8(at, 0xcd);
          view.setUint16(at + 1, value);
          this.length += 3;
        } else {
          view.setUint8(at, 0xce);
          view.setUint32(at + 1, value);
          this.length += 5;
        }
      } else if (value >= -0x20) {
        view.setUint8(at, 0xe0 | (value + 0x20));
        this.length += 1;
      } else if (value >= -0x80) {
        view.setUint8(at, 0xd0);
        view.setInt8(at + 1, value);
        this.length += 2;
      } else if (value >= -0x8000) {
        view.setUint8(at, 0xd1);
        view.setInt16(at + 1, value);
        this.length += 3;
      } else {
        view.setUint8(at, 0xd2);
        view.setInt32(at + 1, value);
        this.length += 5;
      }
      return;
    }
    view.setUint8(at, 0xcb);
    view.setFloat64(at + 1, value);
    this.length += 9;
  }

  /** A string of code units below 0x80 only: its UTF-8 is its code units. */
  private ascii(value: string): void {
    const size = value.length;
    this.reserve(5 + size);
    const { bytes } = this;
    let at = this.length;
    if (size < 32) {
      bytes[at++] = 0xa0 + size;
    } else if (size < 0x100) {
      bytes[at++] = 0xd9;
      bytes[at++] = size;
    } else if (size < 0x10000) {
      bytes[at++] = 0xda;
      this.view.setUint16(at, size);
      at += 2;
    } else {
      bytes[at++] = 0xdb;
      this.view.setUint32(at, size);
      at += 4;
    }
    for (let index = 0; index < size; index++) bytes[at++] = value.charCodeAt(index);
    this.length = at;
  }

  private header(size: number, fixed: number, sized16: number): void {
    this.reserve(5);
    const at = this.length;
    if (size < 16) {
      this.view.setUint8(at, fixed + size);
      this.length += 1;
    } else if (size < 0x10000) {
      this.view.setUint8(at, sized16);
      this.view.setUint16(at + 1, size);
      this.length += 3;
    } else {
      this.view.setUint8(at, sized16 + 1);
      this.view.setUint32(at + 1, size);
      this.length += 5;
    }
  }

  private byte(value: number): void {
    this.reserve(1);
    this.bytes[this.length++] = value;
  }

  private copy(encoded: Uint8Array): void {
    this.reserve(encoded.length);
    this.bytes.set(encoded, this.length);
    this.length += encoded.length;
  }

  private reserve(size: number): void {
    if (this.length + size > this.bytes.length) this.grow(2 * (this.length + size));
  }

  private grow(size: number): void {
    const bytes = new Uint8Array(size);
    bytes.set(this.bytes.subarray(0, this.length));
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer);
  }
}

/** Whether every code unit of `value` is below 0x80. */
function isAscii(value: string): boolean {
  for (let index = 0; index < value.length; index++) {
    if (value.charCodeAt(index) >= 0x80) return false;
  }
  return true;
}
