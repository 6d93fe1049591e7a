/**
 * AMQP 1.0 format codes (part 1 "Types": §1.2 for the constructor layout, §1.6 for the
 * primitive type encodings) and the message section descriptors (part 3 "Messaging", §3.2).
 */
export const Code = {
  Described: 0x00,
  Null: 0x40,
  True: 0x41,
  False: 0x42,
  Uint0: 0x43,
  Ulong0: 0x44,
  List0: 0x45,
  Ubyte: 0x50,
  Byte: 0x51,
  SmallUint: 0x52,
  SmallUlong: 0x53,
  SmallInt: 0x54,
  SmallLong: 0x55,
  Boolean: 0x56,
  Ushort: 0x60,
  Short: 0x61,
  Uint: 0x70,
  Int: 0x71,
  Float: 0x72,
  Char: 0x73,
  Decimal32: 0x74,
  Ulong: 0x80,
  Long: 0x81,
  Double: 0x82,
  Timestamp: 0x83,
  Decimal64: 0x84,
  Decimal128: 0x94,
  Uuid: 0x98,
  Vbin8: 0xa0,
  Str8: 0xa1,
  Sym8: 0xa3,
  Vbin32: 0xb0,
  Str32: 0xb1,
  Sym32: 0xb3,
  List8: 0xc0,
  Map8: 0xc1,
  List32: 0xd0,
  Map32: 0xd1,
  Array8: 0xe0,
  Array32: 0xf0,
} as const;

/** Descriptor codes (ulong, domain 0x00000000) of the message sections, in their wire order. */
export const Section = {
  Header: 0x70,
  DeliveryAnnotations: 0x71,
  MessageAnnotations: 0x72,
  Properties: 0x73,
  ApplicationProperties: 0x74,
  Data: 0x75,
  AmqpSequence: 0x76,
  AmqpValue: 0x77,
  Footer: 0x78,
} as const;

/**
 * The symbolic descriptors of the sections (part 3 §3.2), which a sender may use instead of
 * the numeric ones; index = code - 0x70. Kept as bytes so the scanner can compare without
 * decoding a string.
 */
export const SECTION_SYMBOLS: readonly Uint8Array[] = [
  'amqp:header:list',
  'amqp:delivery-annotations:map',
  'amqp:message-annotations:map',
  'amqp:properties:list',
  'amqp:application-properties:map',
  'amqp:data:binary',
  'amqp:amqp-sequence:list',
  'amqp:value:*',
  'amqp:footer:map',
].map((s) => new TextEncoder().encode(s));
