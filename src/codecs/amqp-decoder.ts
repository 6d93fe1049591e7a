import { CodecError, hex } from './codec-error.js';
import { Code } from './format-codes.js';
import {
  MAX_DEPTH,
  isInt32,
  type AmqpArray,
  type AmqpArrayElementType,
  type AmqpValue,
} from './amqp-value.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
const TWO_32 = 0x1_0000_0000;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * Reads AMQP 1.0 encodings (every form of part 1 §1.6) from `bytes[pos, end)` through one
 * DataView. Built to survive hostile input: every length is checked against the bytes left
 * before anything is read or allocated (a list32 claiming 2^32 elements in 10 bytes is
 * rejected, not allocated), nesting is capped at MAX_DEPTH, and every failure is a CodecError
 * carrying the offending byte offset. Binary values are views into `bytes` (no copy).
 */
export class AmqpDecoder {
  private readonly view: DataView;
  private depth = 0;
  /**
   * Elements of arrays of null, true, false, uint0, ulong0 or list0 take no bytes, so their
   * count cannot be checked against the input; all of them together get this many.
   */
  private zeroWidthBudget: number;

  constructor(
    private readonly bytes: Uint8Array,
    public pos: number,
    public end: number,
  ) {
    if (!(pos >= 0 && pos <= end && end <= bytes.length)) {
      throw new CodecError(`invalid range ${pos}..${end} of ${bytes.length} bytes`, pos);
    }
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.zeroWidthBudget = 4096 + (end - pos);
  }

  /** Reads one value, constructor included. */
  readValue(): AmqpValue {
    const code = this.u8();
    if (code !== Code.Described) return this.readBody(code);
    this.enter();
    const descriptor = this.readValue();
    const value = this.readValue();
    this.depth--;
    return { type: 'described', descriptor, value };
  }

  /** Reads the bytes after the format code `code` (the constructor was consumed). */
  private readBody(code: number): AmqpValue {
    switch (code) {
      case Code.Null:
        return null;
      case Code.True:
        return true;
      case Code.False:
        return false;
      case Code.Boolean: {
        const b = this.u8();
        if (b > 1) throw this.error(`boolean octet must be 0x00 or 0x01, found ${hex(b)}`, -1);
        return b === 1;
      }
      case Code.Ubyte:
        return { type: 'ubyte', value: this.u8() };
      case Code.Byte:
        this.need(1);
        return { type: 'byte', value: this.view.getInt8(this.pos++) };
      case Code.Ushort:
        this.need(2);
        this.pos += 2;
        return { type: 'ushort', value: this.view.getUint16(this.pos - 2) };
      case Code.Short:
        this.need(2);
        this.pos += 2;
        return { type: 'short', value: this.view.getInt16(this.pos - 2) };
      case Code.Uint0:
        return { type: 'uint', value: 0 };
      case Code.SmallUint:
        return { type: 'uint', value: this.u8() };
      case Code.Uint:
        return { type: 'uint', value: this.u32() };
      case Code.SmallInt:
        this.need(1);
        return this.view.getInt8(this.pos++);
      case Code.Int:
        this.need(4);
        this.pos += 4;
        return this.view.getInt32(this.pos - 4);
      case Code.Ulong0:
        return { type: 'ulong', value: 0n };
      case Code.SmallUlong:
        return { type: 'ulong', value: BigInt(this.u8()) };
      case Code.Ulong:
        this.need(8);
        this.pos += 8;
        return { type: 'ulong', value: this.view.getBigUint64(this.pos - 8) };
      case Code.SmallLong:
        this.need(1);
        return BigInt(this.view.getInt8(this.pos++));
      case Code.Long:
        this.need(8);
        this.pos += 8;
        return this.view.getBigInt64(this.pos - 8);
      case Code.Float:
        this.need(4);
        this.pos += 4;
        return { type: 'float', value: this.view.getFloat32(this.pos - 4) };
      case Code.Double: {
        this.need(8);
        this.pos += 8;
        const value = this.view.getFloat64(this.pos - 8);
        // Keep the tag where the plain number would re-encode as an int.
        return isInt32(value) ? { type: 'double', value } : value;
      }
      case Code.Decimal32:
        return { type: 'decimal32', value: this.take(4) };
      case Code.Decimal64:
        return { type: 'decimal64', value: this.take(8) };
      case Code.Decimal128:
        return { type: 'decimal128', value: this.take(16) };
      case Code.Char: {
        const codePoint = this.u32();
        if (codePoint > 0x10ffff) throw this.error('char is not a Unicode code point', -4);
        return { type: 'char', value: String.fromCodePoint(codePoint) };
      }
      case Code.Timestamp:
        return { type: 'timestamp', value: this.i64AsNumber() };
      case Code.Uuid:
        return { type: 'uuid', value: formatUuid(this.take(16)) };
      case Code.Vbin8:
        return this.take(this.u8());
      case Code.Vbin32:
        return this.take(this.u32());
      case Code.Str8:
        return this.readUtf8(this.u8());
      case Code.Str32:
        return this.readUtf8(this.u32());
      case Code.Sym8:
        return { type: 'symbol', value: this.readAscii(this.u8()) };
      case Code.Sym32:
        return { type: 'symbol', value: this.readAscii(this.u32()) };
      case Code.List0:
        return [];
      case Code.List8:
      case Code.List32:
        return this.readList(code === Code.List8 ? 1 : 4);
      case Code.Map8:
      case Code.Map32:
        return this.readMap(code === Code.Map8 ? 1 : 4);
      case Code.Array8:
      case Code.Array32:
        return this.readArray(code === Code.Array8 ? 1 : 4);
      default:
        throw this.error(`unknown AMQP format code ${hex(code)}`, -1);
    }
  }

  private readList(width: number): AmqpValue[] {
    const saved = this.enterCompound(width);
    const count = this.compoundCount;
    const items = new Array<AmqpValue>(count);
    for (let i = 0; i < count; i++) items[i] = this.readValue();
    this.leaveCompound(saved, 'list');
    return items;
  }

  private readMap(width: number): Map<AmqpValue, AmqpValue> {
    const saved = this.enterCompound(width);
    const count = this.compoundCount;
    if (count % 2 !== 0) throw this.error(`map with an odd number of items (${count})`, -width);
    const map = new Map<AmqpValue, AmqpValue>();
    for (let i = 0; i < count; i += 2) {
      const at = this.pos;
      const key = this.readValue();
      // A compound key prints as JavaScript's default; the offset says where to look.
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the message's words stay as they are
      if (map.has(key)) throw new CodecError(`duplicate map key ${String(key)}`, at);
      map.set(key, this.readValue());
    }
    this.leaveCompound(saved, 'map');
    return map;
  }

  private readArray(width: number): AmqpArray {
    const saved = this.enterCompound(width, false);
    const count = this.compoundCount;
    let descriptor: AmqpValue | undefined;
    let code = this.u8();
    if (code === Code.Described) {
      descriptor = this.readValue();
      code = this.u8();
      if (code === Code.Described) {
        throw this.error('nested descriptors in an array constructor are not supported', -1);
      }
    }
    const elementType = ELEMENT_TYPES.get(code);
    if (elementType === undefined) {
      throw this.error(`unknown array element format code ${hex(code)}`, -1);
    }
    if (code >= Code.Null && code <= Code.List0) {
      // Zero-width elements take no bytes, so bound them by a budget instead.
      this.zeroWidthBudget -= count;
      if (this.zeroWidthBudget < 0) {
        throw this.error(`too many zero-width array elements (${count})`, -1);
      }
    } else if (count > this.end - this.pos) {
      throw this.error(`array claims ${count} elements in ${this.end - this.pos} bytes`, -1);
    }
    const values = new Array<AmqpValue>(count);
    for (let i = 0; i < count; i++) values[i] = untag(this.readBody(code));
    this.leaveCompound(saved, 'array');
    return descriptor === undefined
      ? { type: 'array', elementType, values }
      : { type: 'array', elementType, descriptor, values };
  }

  /** Element count of the compound just entered (set by `enterCompound`). */
  private compoundCount = 0;

  /**
   * Reads a compound's size and count, checks them against the bytes left (each list or map
   * element takes at least one byte; arrays check once their element constructor is known)
   * and narrows `end` to the compound. Returns the outer `end` to restore.
   */
  private enterCompound(width: number, checkCount = true): number {
    const at = this.pos;
    const size = width === 1 ? this.u8() : this.u32();
    if (size < width) throw new CodecError(`compound size ${size} too small for its count`, at);
    if (size > this.end - this.pos) {
      throw new CodecError(
        `compound size ${size} exceeds the ${this.end - this.pos} bytes left`,
        at,
      );
    }
    const count = width === 1 ? this.u8() : this.u32();
    if (checkCount && count > size - width) {
      throw new CodecError(`compound claims ${count} elements in ${size - width} bytes`, at);
    }
    this.enter();
    const outer = this.end;
    this.end = at + width + size;
    this.compoundCount = count;
    return outer;
  }

  private leaveCompound(outer: number, what: string): void {
    if (this.pos !== this.end) {
      throw this.error(`${what} elements end before the ${what}'s declared size`, 0);
    }
    this.end = outer;
    this.depth--;
  }

  private enter(): void {
    if (++this.depth > MAX_DEPTH) throw this.error(`nesting deeper than ${MAX_DEPTH}`, -1);
  }

  private readUtf8(length: number): string {
    const at = this.pos;
    const bytes = this.take(length);
    try {
      return utf8.decode(bytes);
    } catch {
      throw new CodecError('string is not valid UTF-8', at);
    }
  }

  private readAscii(length: number): string {
    const at = this.pos;
    const bytes = this.take(length);
    for (let i = 0; i < length; i++) {
      if ((bytes[i] as number) >= 0x80) throw new CodecError('symbol is not ASCII', at + i);
    }
    return utf8.decode(bytes);
  }

  private u8(): number {
    this.need(1);
    return this.view.getUint8(this.pos++);
  }

  private u32(): number {
    this.need(4);
    this.pos += 4;
    return this.view.getUint32(this.pos - 4);
  }

  /** Signed 64-bit as a number: exact for the ±2^53 range that timestamps live in. */
  private i64AsNumber(): number {
    this.need(8);
    this.pos += 8;
    return this.view.getInt32(this.pos - 8) * TWO_32 + this.view.getUint32(this.pos - 4);
  }

  /** A view of the next `length` bytes. */
  private take(length: number): Uint8Array {
    this.need(length);
    this.pos += length;
    return this.bytes.subarray(this.pos - length, this.pos);
  }

  private need(length: number): void {
    if (length > this.end - this.pos) {
      throw new CodecError(
        `truncated: need ${length} bytes, ${this.end - this.pos} left`,
        this.pos,
      );
    }
  }

  private error(problem: string, offset: number): CodecError {
    return new CodecError(problem, this.pos + offset);
  }
}

const ELEMENT_TYPES = new Map<number, AmqpArrayElementType>([
  [Code.Null, 'null'],
  [Code.True, 'boolean'],
  [Code.False, 'boolean'],
  [Code.Boolean, 'boolean'],
  [Code.Ubyte, 'ubyte'],
  [Code.Ushort, 'ushort'],
  [Code.Uint0, 'uint'],
  [Code.SmallUint, 'uint'],
  [Code.Uint, 'uint'],
  [Code.Ulong0, 'ulong'],
  [Code.SmallUlong, 'ulong'],
  [Code.Ulong, 'ulong'],
  [Code.Byte, 'byte'],
  [Code.Short, 'short'],
  [Code.SmallInt, 'int'],
  [Code.Int, 'int'],
  [Code.SmallLong, 'long'],
  [Code.Long, 'long'],
  [Code.Float, 'float'],
  [Code.Double, 'double'],
  [Code.Decimal32, 'decimal32'],
  [Code.Decimal64, 'decimal64'],
  [Code.Decimal128, 'decimal128'],
  [Code.Char, 'char'],
  [Code.Timestamp, 'timestamp'],
  [Code.Uuid, 'uuid'],
  [Code.Vbin8, 'binary'],
  [Code.Vbin32, 'binary'],
  [Code.Str8, 'string'],
  [Code.Str32, 'string'],
  [Code.Sym8, 'symbol'],
  [Code.Sym32, 'symbol'],
  [Code.List0, 'list'],
  [Code.List8, 'list'],
  [Code.List32, 'list'],
  [Code.Map8, 'map'],
  [Code.Map32, 'map'],
  [Code.Array8, 'array'],
  [Code.Array32, 'array'],
]);

/** Array elements are stored without their tags (the array's elementType says the type). */
function untag(value: AmqpValue): AmqpValue {
  if (typeof value === 'object' && value !== null && 'type' in value && value.type !== 'array') {
    return (value as { value: AmqpValue }).value;
  }
  return value;
}

function formatUuid(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out += '-';
    out += HEX[bytes[i] as number] as string;
  }
  return out;
}

/** Decodes exactly one AMQP value filling `bytes[start, end)`. */
export function decodeAmqpValue(bytes: Uint8Array, start = 0, end = bytes.length): AmqpValue {
  const decoder = new AmqpDecoder(bytes, start, end);
  const value = decoder.readValue();
  if (decoder.pos !== end) {
    throw new CodecError(`${end - decoder.pos} bytes left after the value`, decoder.pos);
  }
  return value;
}
