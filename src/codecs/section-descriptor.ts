import { CodecError, hex } from './codec-error.js';
import { Code, SECTION_SYMBOLS, Section } from './format-codes.js';

const TWO_32 = 0x1_0000_0000;

/**
 * Reads the descriptor of the message section starting at `pos` (`0x00` then a ulong or a
 * symbol) and returns `code * 2^32 + positionAfterDescriptor`. Packing both results into one
 * number keeps the per-message scanner free of allocations; unpack with `sectionCodeOf` and
 * `sectionBodyOf`. Throws CodecError when it is not a known section descriptor.
 */
export function readSectionDescriptor(bytes: Uint8Array, pos: number, end: number): number {
  if (pos + 2 > end) throw new CodecError('truncated message section descriptor', pos);
  if (bytes[pos] !== Code.Described) {
    throw new CodecError(
      `expected a message section (described type 0x00), found ${hex(bytes[pos] as number)}`,
      pos,
    );
  }
  const format = bytes[pos + 1] as number;
  let code = -1;
  let next: number;
  if (format === Code.SmallUlong) {
    if (pos + 3 > end) throw new CodecError('truncated section descriptor', pos + 2);
    code = bytes[pos + 2] as number;
    next = pos + 3;
  } else if (format === Code.Ulong) {
    if (pos + 10 > end) throw new CodecError('truncated section descriptor', pos + 2);
    let high = 0;
    for (let i = pos + 2; i < pos + 9; i++) high |= bytes[i] as number;
    code = high === 0 ? (bytes[pos + 9] as number) : -1;
    next = pos + 10;
  } else if (format === Code.Sym8 || format === Code.Sym32) {
    const width = format === Code.Sym8 ? 1 : 4;
    if (pos + 2 + width > end) throw new CodecError('truncated section descriptor', pos + 2);
    const length = width === 1 ? (bytes[pos + 2] as number) : readU32(bytes, pos + 2);
    const start = pos + 2 + width;
    if (length > end - start) throw new CodecError('truncated section descriptor', pos + 2);
    code = symbolCode(bytes, start, length);
    next = start + length;
  } else {
    throw new CodecError(
      `expected a ulong or symbol section descriptor, found ${hex(format)}`,
      pos + 1,
    );
  }
  if (code < Section.Header || code > Section.Footer) {
    throw new CodecError('unknown message section descriptor', pos + 1);
  }
  return code * TWO_32 + next;
}

export function sectionCodeOf(packed: number): number {
  return Math.floor(packed / TWO_32);
}

export function sectionBodyOf(packed: number): number {
  return packed % TWO_32;
}

/**
 * Whether a section with descriptor `code` may follow one with `previous` (0 at the start):
 * sections come in the order of part 3 §3.2, only data and amqp-sequence repeat, and the
 * body is data sections, amqp-sequence sections or one amqp-value, never a mix.
 */
export function sectionMayFollow(previous: number, code: number): boolean {
  if (code > previous) {
    return !(isBody(previous) && isBody(code));
  }
  return code === previous && (code === Section.Data || code === Section.AmqpSequence);
}

function isBody(code: number): boolean {
  return code >= Section.Data && code <= Section.AmqpValue;
}

function symbolCode(bytes: Uint8Array, start: number, length: number): number {
  for (let i = 0; i < SECTION_SYMBOLS.length; i++) {
    const symbol = SECTION_SYMBOLS[i] as Uint8Array;
    if (symbol.length !== length) continue;
    let j = 0;
    while (j < length && bytes[start + j] === symbol[j]) j++;
    if (j === length) return Section.Header + i;
  }
  return -1;
}

export function readU32(bytes: Uint8Array, pos: number): number {
  return (
    (bytes[pos] as number) * 0x100_0000 +
    (((bytes[pos + 1] as number) << 16) |
      ((bytes[pos + 2] as number) << 8) |
      (bytes[pos + 3] as number))
  );
}
