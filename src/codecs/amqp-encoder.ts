import { CodecError } from './codec-error.js';
import { Code } from './format-codes.js';
import {
  MAX_DEPTH,
  isInt32,
  isList,
  type AmqpArray,
  type AmqpArrayElementType,
  type AmqpTyped,
  type AmqpValue,
} from './amqp-value.js';

const utf8 = new TextEncoder();
const TWO_32 = 0x1_0000_0000;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * Writes AMQP 1.0 encodings into one growable buffer. An instance is meant to be reused:
 * growing a buffer once and writing through one DataView costs far less than allocating a
 * Uint8Array per value, which is what makes encoding a result message cheap. `finish()`
 * returns a copy of exactly the bytes written, so the buffer can be reused right away.
 *
 * Always picks the smallest encoding (uint0/smalluint, list8 over list32, str8 over str32…).
 * Compound sizes are not known before their elements are written, so lists and maps are
 * written with an 8-bit header and moved up by 6 bytes when they turn out not to fit.
 */
export class AmqpEncoder {
  private bytes: Uint8Array;
  private view: DataView;
  private pos = 0;

  constructor(initialSize = 1024) {
    this.bytes = new Uint8Array(initialSize);
    this.view = new DataView(this.bytes.buffer);
  }

  reset(): void {
    this.pos = 0;
  }

  finish(): Uint8Array {
    return this.bytes.slice(0, this.pos);
  }

  /** Writes one value with its constructor. `depth` is the number of enclosing containers. */
  writeValue(value: AmqpValue, depth = 0): void {
    switch (typeof value) {
      case 'string':
        this.writeString(value);
        return;
      case 'number':
        if (isInt32(value)) this.writeInt(value);
        else this.writeDouble(value);
        return;
      case 'boolean':
        this.writeByte(value ? Code.True : Code.False);
        return;
      case 'bigint':
        this.writeLong(value);
        return;
      case 'object':
        break;
      default:
        throw this.error(`cannot encode a ${typeof value} as an AMQP value`);
    }
    if (value === null) {
      this.writeByte(Code.Null);
    } else if (value instanceof Uint8Array) {
      this.writeBinary(value);
    } else if (isList(value)) {
      this.writeList(value, depth);
    } else if (value instanceof Map) {
      this.writeMap(value, depth);
    } else {
      this.writeTyped(value as AmqpTyped, depth);
    }
  }

  private writeTyped(value: AmqpTyped, depth: number): void {
    switch (value.type) {
      case 'ubyte':
      case 'ushort':
      case 'uint':
      case 'byte':
      case 'short':
      case 'int':
      case 'float':
      case 'double':
      case 'timestamp':
      case 'ulong':
      case 'long':
      case 'symbol':
      case 'char':
      case 'uuid':
      case 'decimal32':
      case 'decimal64':
      case 'decimal128': {
        const type = value.type;
        const code = smallestCode(type, value.value, this);
        this.writeByte(code);
        this.writeBody(type, code, value.value, depth);
        return;
      }
      case 'described': {
        const inner = this.enter(depth);
        this.writeByte(Code.Described);
        this.writeValue(value.descriptor, inner);
        this.writeValue(value.value, inner);
        return;
      }
      case 'array':
        this.writeArray(value, depth);
        return;
      default:
        throw this.error(
          `cannot encode an object with type '${String((value as { type: unknown }).type)}'`,
        );
    }
  }

  /** The constructor of a message section: described type with a smallulong descriptor. */
  writeSectionDescriptor(code: number): void {
    this.ensure(3);
    this.bytes[this.pos] = Code.Described;
    this.bytes[this.pos + 1] = Code.SmallUlong;
    this.bytes[this.pos + 2] = code;
    this.pos += 3;
  }

  writeByte(code: number): void {
    this.ensure(1);
    this.view.setUint8(this.pos++, code);
  }

  private writeSymbol(value: string): void {
    const code = value.length <= 0xff ? Code.Sym8 : Code.Sym32;
    this.writeByte(code);
    this.writeBody('symbol', code, value, 0);
  }

  private writeInt(value: number): void {
    if (value >= -128 && value <= 127) {
      this.ensure(2);
      this.view.setUint8(this.pos, Code.SmallInt);
      this.view.setInt8(this.pos + 1, value);
      this.pos += 2;
    } else {
      this.ensure(5);
      this.view.setUint8(this.pos, Code.Int);
      this.view.setInt32(this.pos + 1, value);
      this.pos += 5;
    }
  }

  private writeDouble(value: number): void {
    this.ensure(9);
    this.view.setUint8(this.pos, Code.Double);
    this.view.setFloat64(this.pos + 1, value);
    this.pos += 9;
  }

  private writeLong(value: bigint): void {
    const code = smallestCode('long', value, this);
    this.writeByte(code);
    this.writeBody('long', code, value, 0);
  }

  writeBinary(value: Uint8Array): void {
    const code = value.length <= 0xff ? Code.Vbin8 : Code.Vbin32;
    this.writeByte(code);
    this.writeBody('binary', code, value, 0);
  }

  private writeString(value: string): void {
    // Reserve an str8 header and move the bytes up if the UTF-8 form is longer than 255.
    this.ensure(5 + value.length * 3);
    const start = this.pos;
    const length = this.writeUtf8(value, start + 2);
    if (length <= 0xff) {
      this.bytes[start] = Code.Str8;
      this.bytes[start + 1] = length;
      this.pos = start + 2 + length;
    } else {
      this.bytes.copyWithin(start + 5, start + 2, start + 2 + length);
      this.bytes[start] = Code.Str32;
      this.view.setUint32(start + 1, length);
      this.pos = start + 5 + length;
    }
  }

  /** Writes a list with its constructor (list0, list8 or list32). */
  writeList(items: readonly AmqpValue[], depth: number): void {
    if (items.length === 0) {
      this.writeByte(Code.List0);
      return;
    }
    const inner = this.enter(depth);
    const start = this.beginCompound8();
    for (const item of items) this.writeValue(item, inner);
    this.endCompound(start, items.length, Code.List8, Code.List32);
  }

  /** Writes a map with its constructor (map8 or map32), entries in iteration order. */
  private writeMap(map: ReadonlyMap<AmqpValue, AmqpValue>, depth: number): void {
    const inner = this.enter(depth);
    const start = this.beginCompound8();
    for (const [key, value] of map) {
      this.writeValue(key, inner);
      this.writeValue(value, inner);
    }
    this.endCompound(start, map.size * 2, Code.Map8, Code.Map32);
  }

  /**
   * Writes a map from a record: keys as symbols (annotations) or strings (application
   * properties), in `Object.keys` order (insertion order, integer-like keys first).
   */
  writeRecord(
    record: Readonly<Record<string, AmqpValue>>,
    symbolKeys: boolean,
    check?: (key: string, value: AmqpValue) => void,
  ): void {
    const start = this.beginCompound8();
    const keys = Object.keys(record);
    for (const key of keys) {
      const value = record[key] as AmqpValue;
      check?.(key, value);
      if (symbolKeys) this.writeSymbol(key);
      else this.writeString(key);
      this.writeValue(value, 1);
    }
    this.endCompound(start, keys.length * 2, Code.Map8, Code.Map32);
  }

  /** Reserves the 3 bytes of a list8/map8 header and returns where it starts. */
  beginCompound8(): number {
    this.ensure(3);
    const start = this.pos;
    this.pos += 3;
    return start;
  }

  /** Fills in the header reserved by `beginCompound8`, widening it to 32 bits if needed. */
  endCompound(start: number, count: number, code8: number, code32: number): void {
    const contentLength = this.pos - (start + 3);
    if (count <= 0xff && contentLength + 1 <= 0xff) {
      this.bytes[start] = code8;
      this.bytes[start + 1] = contentLength + 1;
      this.bytes[start + 2] = count;
      return;
    }
    this.widen(start, contentLength);
    this.bytes[start] = code32;
    this.view.setUint32(start + 1, contentLength + 4);
    this.view.setUint32(start + 5, count);
  }

  private widen(start: number, contentLength: number): void {
    if (contentLength + 4 >= TWO_32) throw this.error('compound value larger than 4 GiB');
    this.ensure(6);
    this.bytes.copyWithin(start + 9, start + 3, start + 3 + contentLength);
    this.pos += 6;
  }

  private writeArray(array: AmqpArray, depth: number): void {
    const inner = this.enter(depth);
    const start = this.beginCompound8();
    this.writeArrayPayload(array, inner);
    const contentLength = this.pos - (start + 3);
    if (array.values.length <= 0xff && contentLength + 1 <= 0xff) {
      this.bytes[start] = Code.Array8;
      this.bytes[start + 1] = contentLength + 1;
      this.bytes[start + 2] = array.values.length;
    } else {
      this.widen(start, contentLength);
      this.bytes[start] = Code.Array32;
      this.view.setUint32(start + 1, contentLength + 4);
      this.view.setUint32(start + 5, array.values.length);
    }
  }

  /** Element constructor (with descriptor, if any) and the elements without constructors. */
  private writeArrayPayload(array: AmqpArray, depth: number): void {
    if (!Array.isArray(array.values)) throw this.error('array values must be an array');
    if (array.descriptor !== undefined) {
      this.writeByte(Code.Described);
      this.writeValue(array.descriptor, depth);
    }
    const code = arrayElementCode(array, this);
    this.writeByte(code);
    for (const element of array.values) this.writeBody(array.elementType, code, element, depth);
  }

  /** Writes the bytes after the constructor `code` of a value of AMQP type `type`. */
  private writeBody(type: AmqpArrayElementType, code: number, value: unknown, depth: number): void {
    switch (type) {
      case 'null':
        if (value !== null) throw this.error('array of null holds a non-null value');
        return;
      case 'boolean':
        if (typeof value !== 'boolean') throw this.error('expected a boolean');
        if (code === Code.Boolean) this.writeRaw8(value ? 1 : 0);
        return;
      case 'ubyte':
        this.writeRaw8(checkInteger(value, 0, 0xff, type, this));
        return;
      case 'byte':
        this.writeRaw8(checkInteger(value, -128, 127, type, this) & 0xff);
        return;
      case 'ushort':
        this.ensure(2);
        this.view.setUint16(this.pos, checkInteger(value, 0, 0xffff, type, this));
        this.pos += 2;
        return;
      case 'short':
        this.ensure(2);
        this.view.setInt16(this.pos, checkInteger(value, -0x8000, 0x7fff, type, this));
        this.pos += 2;
        return;
      case 'uint':
        this.writeSized(code, checkInteger(value, 0, 0xffff_ffff, type, this), Code.SmallUint);
        return;
      case 'int': {
        const n = checkInteger(value, -0x8000_0000, 0x7fff_ffff, type, this);
        if (code === Code.SmallInt) this.writeRaw8(n & 0xff);
        else this.writeRaw32(n >>> 0);
        return;
      }
      case 'ulong':
      case 'long':
        this.writeLongBody(type, code, value);
        return;
      case 'float':
      case 'double':
        if (typeof value !== 'number') throw this.error(`expected a number for a ${type}`);
        this.ensure(8);
        if (type === 'float') this.view.setFloat32(this.pos, value);
        else this.view.setFloat64(this.pos, value);
        this.pos += type === 'float' ? 4 : 8;
        return;
      case 'timestamp': {
        if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
          throw this.error('expected a timestamp in integral epoch milliseconds');
        }
        const high = Math.floor(value / TWO_32);
        this.ensure(8);
        this.view.setInt32(this.pos, high);
        this.view.setUint32(this.pos + 4, value - high * TWO_32);
        this.pos += 8;
        return;
      }
      case 'char':
        this.writeRaw32(checkChar(value, this));
        return;
      case 'uuid':
        this.writeUuid(value);
        return;
      case 'decimal32':
      case 'decimal64':
      case 'decimal128':
        this.writeFixedBytes(value, type === 'decimal32' ? 4 : type === 'decimal64' ? 8 : 16);
        return;
      case 'binary':
        if (!(value instanceof Uint8Array)) throw this.error('expected a Uint8Array for binary');
        this.writeVariable(code, value.length, Code.Vbin8);
        this.writeBytes(value);
        return;
      case 'string':
        if (typeof value !== 'string') throw this.error('expected a string');
        this.writeStringBody(code, value);
        return;
      case 'symbol':
        if (typeof value !== 'string') throw this.error('expected a string for a symbol');
        this.writeVariable(code, value.length, Code.Sym8);
        this.writeAscii(value);
        return;
      case 'list':
      case 'map':
      case 'array':
        this.writeCompoundElement(type, value, depth);
        return;
    }
  }

  /** Compound array elements always use the 32-bit form: the shared constructor comes first. */
  private writeCompoundElement(type: 'list' | 'map' | 'array', value: unknown, depth: number) {
    const inner = this.enter(depth);
    this.ensure(8);
    const start = this.pos;
    this.pos += 8;
    let count: number;
    if (type === 'list') {
      if (!isList(value)) throw this.error('expected an array for a list element');
      for (const item of value) this.writeValue(item, inner);
      count = value.length;
    } else if (type === 'map') {
      if (!(value instanceof Map)) throw this.error('expected a Map for a map element');
      for (const [k, v] of value as ReadonlyMap<AmqpValue, AmqpValue>) {
        this.writeValue(k, inner);
        this.writeValue(v, inner);
      }
      count = value.size * 2;
    } else {
      if (!isArrayValue(value)) throw this.error('expected an AMQP array for an array element');
      this.writeArrayPayload(value, inner);
      count = value.values.length;
    }
    const size = this.pos - start - 4;
    if (size >= TWO_32) throw this.error('compound value larger than 4 GiB');
    this.view.setUint32(start, size);
    this.view.setUint32(start + 4, count);
  }

  private writeLongBody(type: 'ulong' | 'long', code: number, value: unknown): void {
    if (typeof value !== 'bigint') throw this.error(`expected a bigint for a ${type}`);
    if (code === Code.Ulong0) return;
    if (code === Code.SmallUlong) {
      this.writeRaw8(Number(value));
    } else if (code === Code.SmallLong) {
      this.writeRaw8(Number(value) & 0xff);
    } else {
      this.ensure(8);
      if (type === 'ulong') this.view.setBigUint64(this.pos, value);
      else this.view.setBigInt64(this.pos, value);
      this.pos += 8;
    }
  }

  private writeSized(code: number, value: number, smallCode: number): void {
    if (code === smallCode) this.writeRaw8(value);
    else if (code !== Code.Uint0) this.writeRaw32(value);
  }

  private writeVariable(code: number, length: number, code8: number): void {
    if (code === code8) {
      if (length > 0xff) throw this.error('value too long for its 8-bit size field');
      this.writeRaw8(length);
    } else {
      if (length >= TWO_32) throw this.error('value longer than 4 GiB');
      this.writeRaw32(length);
    }
  }

  private writeStringBody(code: number, value: string): void {
    if (code === Code.Str8) {
      this.ensure(1 + value.length * 3);
      const length = this.writeUtf8(value, this.pos + 1);
      if (length > 0xff) throw this.error('string too long for str8');
      this.bytes[this.pos] = length;
      this.pos += 1 + length;
    } else {
      this.ensure(4 + value.length * 3);
      const length = this.writeUtf8(value, this.pos + 4);
      this.view.setUint32(this.pos, length);
      this.pos += 4 + length;
    }
  }

  /** UTF-8 encodes `value` at `at` (space already ensured) and returns its byte length. */
  private writeUtf8(value: string, at: number): number {
    const bytes = this.bytes;
    // ASCII fast path: most keys and values are ASCII and this avoids a subarray per string.
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x80) {
        return utf8.encodeInto(value, bytes.subarray(at)).written;
      }
      bytes[at + i] = c;
    }
    return value.length;
  }

  private writeAscii(value: string): void {
    this.ensure(value.length);
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x80) throw this.error(`symbol '${value}' is not ASCII`);
      this.bytes[this.pos + i] = c;
    }
    this.pos += value.length;
  }

  private writeUuid(value: unknown): void {
    if (typeof value !== 'string' || !UUID.test(value)) {
      throw this.error(`expected a UUID string like 8-4-4-4-12 hex digits, got ${String(value)}`);
    }
    this.ensure(16);
    const digits = value.replaceAll('-', '');
    for (let i = 0; i < 16; i++) {
      this.bytes[this.pos + i] = parseInt(digits.slice(i * 2, i * 2 + 2), 16);
    }
    this.pos += 16;
  }

  private writeFixedBytes(value: unknown, length: number): void {
    if (!(value instanceof Uint8Array) || value.length !== length) {
      throw this.error(`expected ${length} raw bytes for a decimal${length * 8}`);
    }
    this.writeBytes(value);
  }

  private writeBytes(value: Uint8Array): void {
    this.ensure(value.length);
    this.bytes.set(value, this.pos);
    this.pos += value.length;
  }

  private writeRaw8(value: number): void {
    this.ensure(1);
    this.bytes[this.pos++] = value;
  }

  private writeRaw32(value: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, value);
    this.pos += 4;
  }

  private enter(depth: number): number {
    if (depth + 1 > MAX_DEPTH) throw this.error(`value nested deeper than ${MAX_DEPTH} levels`);
    return depth + 1;
  }

  error(problem: string): CodecError {
    return new CodecError(`cannot encode: ${problem}`, this.pos);
  }

  private ensure(extra: number): void {
    const needed = this.pos + extra;
    if (needed <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(needed, this.bytes.length * 2));
    grown.set(this.bytes.subarray(0, this.pos));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }
}

function isArrayValue(value: unknown): value is AmqpArray {
  return (
    typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'array'
  );
}

function checkInteger(
  value: unknown,
  min: number,
  max: number,
  type: string,
  encoder: AmqpEncoder,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw encoder.error(`${String(value)} is not a ${type} (an integer in ${min}..${max})`);
  }
  return value;
}

function checkChar(value: unknown, encoder: AmqpEncoder): number {
  const codePoint = typeof value === 'string' ? value.codePointAt(0) : undefined;
  if (codePoint === undefined || String.fromCodePoint(codePoint) !== value) {
    throw encoder.error('a char must be a string of exactly one code point');
  }
  return codePoint;
}

const ULONG_MAX = (1n << 64n) - 1n;
const LONG_MIN = -(1n << 63n);
const LONG_MAX = (1n << 63n) - 1n;

/** The smallest format code that can hold one value of a tagged scalar type. */
function smallestCode(type: AmqpArrayElementType, value: unknown, encoder: AmqpEncoder): number {
  switch (type) {
    case 'uint': {
      const n = checkInteger(value, 0, 0xffff_ffff, type, encoder);
      return n === 0 ? Code.Uint0 : n <= 0xff ? Code.SmallUint : Code.Uint;
    }
    case 'int': {
      const n = checkInteger(value, -0x8000_0000, 0x7fff_ffff, type, encoder);
      return n >= -128 && n <= 127 ? Code.SmallInt : Code.Int;
    }
    case 'ulong': {
      if (typeof value !== 'bigint' || value < 0n || value > ULONG_MAX) {
        throw encoder.error(`${String(value)} is not a ulong (a bigint in 0..2^64-1)`);
      }
      return value === 0n ? Code.Ulong0 : value <= 0xffn ? Code.SmallUlong : Code.Ulong;
    }
    case 'long':
      if (typeof value !== 'bigint' || value < LONG_MIN || value > LONG_MAX) {
        throw encoder.error(`${String(value)} is not a long (a bigint in -2^63..2^63-1)`);
      }
      return value >= -128n && value <= 127n ? Code.SmallLong : Code.Long;
    case 'symbol':
      return typeof value === 'string' && value.length > 0xff ? Code.Sym32 : Code.Sym8;
    default:
      return FIXED_CODES[type];
  }
}

/** Types whose single encoding does not depend on the value. */
const FIXED_CODES: Record<AmqpArrayElementType, number> = {
  null: Code.Null,
  boolean: Code.Boolean,
  ubyte: Code.Ubyte,
  ushort: Code.Ushort,
  uint: Code.Uint,
  ulong: Code.Ulong,
  byte: Code.Byte,
  short: Code.Short,
  int: Code.Int,
  long: Code.Long,
  float: Code.Float,
  double: Code.Double,
  decimal32: Code.Decimal32,
  decimal64: Code.Decimal64,
  decimal128: Code.Decimal128,
  char: Code.Char,
  timestamp: Code.Timestamp,
  uuid: Code.Uuid,
  binary: Code.Vbin32,
  string: Code.Str32,
  symbol: Code.Sym32,
  list: Code.List32,
  map: Code.Map32,
  array: Code.Array32,
};

/**
 * One constructor is shared by all elements, so pick the smallest one that fits every element
 * (uint0, ulong0 and list0 are never used: a zero-width element reads badly in other decoders).
 */
function arrayElementCode(array: AmqpArray, encoder: AmqpEncoder): number {
  const values = array.values;
  switch (array.elementType) {
    case 'uint':
      return values.every((v) => typeof v === 'number' && v >= 0 && v <= 0xff)
        ? Code.SmallUint
        : Code.Uint;
    case 'ulong':
      return values.every((v) => typeof v === 'bigint' && v >= 0n && v <= 0xffn)
        ? Code.SmallUlong
        : Code.Ulong;
    case 'int':
      return values.every((v) => typeof v === 'number' && v >= -128 && v <= 127)
        ? Code.SmallInt
        : Code.Int;
    case 'long':
      return values.every((v) => typeof v === 'bigint' && v >= -128n && v <= 127n)
        ? Code.SmallLong
        : Code.Long;
    case 'binary':
      return values.every((v) => v instanceof Uint8Array && v.length <= 0xff)
        ? Code.Vbin8
        : Code.Vbin32;
    case 'string':
      return values.every((v) => typeof v === 'string' && utf8Length(v) <= 0xff)
        ? Code.Str8
        : Code.Str32;
    case 'symbol':
      return values.every((v) => typeof v === 'string' && v.length <= 0xff)
        ? Code.Sym8
        : Code.Sym32;
    default: {
      const code = FIXED_CODES[array.elementType] as number | undefined;
      if (code === undefined) {
        const given: unknown = array.elementType; // a JavaScript caller may pass anything
        throw encoder.error(`unknown array element type '${String(given)}'`);
      }
      return code;
    }
  }
}

function utf8Length(value: string): number {
  let length = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) length += 1;
    else if (c < 0x800) length += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length += 4;
        i++;
      } else length += 3;
    } else length += 3;
  }
  return length;
}

const shared = new AmqpEncoder();
let sharedBusy = false;

/**
 * Runs `write` on the module's shared encoder and returns a copy of what it wrote. The shared
 * encoder keeps its grown buffer between calls; a nested call (not expected, but possible
 * from a getter) gets a fresh encoder instead of corrupting the outer one.
 */
export function encodeWith(write: (encoder: AmqpEncoder) => void): Uint8Array {
  if (sharedBusy) {
    const fresh = new AmqpEncoder();
    write(fresh);
    return fresh.finish();
  }
  sharedBusy = true;
  try {
    shared.reset();
    write(shared);
    return shared.finish();
  } finally {
    sharedBusy = false;
  }
}

/** Encodes one AMQP value (constructor included), smallest encoding first. */
export function encodeAmqpValue(value: AmqpValue): Uint8Array {
  return encodeWith((encoder) => {
    encoder.writeValue(value);
  });
}
