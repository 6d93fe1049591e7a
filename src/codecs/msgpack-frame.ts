import { CodecError, hex } from './codec-error.js';
import { readU32 } from './section-descriptor.js';

/**
 * Checks that `bytes[start, end)` is exactly one well-framed msgpack value, before the
 * @msgpack/msgpack decoder sees it. That decoder pre-allocates `new Array(n)` for whatever
 * length a header claims, so nested array headers claiming 65535 elements each would allocate
 * far more than the input's size. Here every value still owed by an open array or map is
 * counted, and since each takes at least one byte, a claim larger than the bytes left is
 * rejected before any allocation. Also gives exact byte positions for truncation errors.
 */
export function checkMsgpackFrame(bytes: Uint8Array, start: number, end: number): void {
  let pos = start;
  let pending = 1;
  while (pending > 0) {
    if (pos >= end) throw new CodecError('truncated msgpack: expected a value', pos);
    const head = bytes[pos] as number;
    pending--;
    let length = 1; // bytes of this value, header included, not counting its elements
    let elements = 0;
    if (head <= 0x7f || head >= 0xe0 || head === 0xc0 || head === 0xc2 || head === 0xc3) {
      length = 1;
    } else if (head <= 0x8f) {
      elements = (head & 0x0f) * 2;
    } else if (head <= 0x9f) {
      elements = head & 0x0f;
    } else if (head <= 0xbf) {
      length = 1 + (head & 0x1f);
    } else {
      switch (head) {
        case 0xc4: // bin 8
        case 0xd9: // str 8
          length = 2 + sizeAt(bytes, pos + 1, 1, end);
          break;
        case 0xc5:
        case 0xda:
          length = 3 + sizeAt(bytes, pos + 1, 2, end);
          break;
        case 0xc6:
        case 0xdb:
          length = 5 + sizeAt(bytes, pos + 1, 4, end);
          break;
        case 0xc7: // ext 8: size, type, data
          length = 3 + sizeAt(bytes, pos + 1, 1, end);
          break;
        case 0xc8:
          length = 4 + sizeAt(bytes, pos + 1, 2, end);
          break;
        case 0xc9:
          length = 6 + sizeAt(bytes, pos + 1, 4, end);
          break;
        case 0xcc: // uint 8
        case 0xd0: // int 8
          length = 2;
          break;
        case 0xcd:
        case 0xd1:
          length = 3;
          break;
        case 0xca: // float 32
        case 0xce:
        case 0xd2:
          length = 5;
          break;
        case 0xcb: // float 64
        case 0xcf:
        case 0xd3:
          length = 9;
          break;
        case 0xd4: // fixext 1, 2, 4, 8, 16: type byte plus data
          length = 3;
          break;
        case 0xd5:
          length = 4;
          break;
        case 0xd6:
          length = 6;
          break;
        case 0xd7:
          length = 10;
          break;
        case 0xd8:
          length = 18;
          break;
        case 0xdc: // array 16
          elements = sizeAt(bytes, pos + 1, 2, end);
          length = 3;
          break;
        case 0xdd:
          elements = sizeAt(bytes, pos + 1, 4, end);
          length = 5;
          break;
        case 0xde: // map 16
          elements = sizeAt(bytes, pos + 1, 2, end) * 2;
          length = 3;
          break;
        case 0xdf:
          elements = sizeAt(bytes, pos + 1, 4, end) * 2;
          length = 5;
          break;
        default: // 0xc1 is never used
          throw new CodecError(`invalid msgpack type byte ${hex(head)}`, pos);
      }
    }
    if (length > end - pos) throw new CodecError(`truncated msgpack value ${hex(head)}`, pos);
    pos += length;
    pending += elements;
    if (pending > end - pos) {
      throw new CodecError(`msgpack header claims ${pending} values in ${end - pos} bytes`, pos);
    }
  }
  if (pos !== end) throw new CodecError(`${end - pos} bytes left after the msgpack value`, pos);
}

function sizeAt(bytes: Uint8Array, pos: number, width: number, end: number): number {
  if (width > end - pos) throw new CodecError('truncated msgpack size', pos);
  if (width === 1) return bytes[pos] as number;
  if (width === 2) return ((bytes[pos] as number) << 8) | (bytes[pos + 1] as number);
  return readU32(bytes, pos);
}
