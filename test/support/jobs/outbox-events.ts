// Events for the outbox writers' tests: events of every kind whose text needs quoting in an
// array literal, and events the writers refuse.
import type { OutboxEvent } from '../../../src/outbox/outbox-event.js';

/**
 * Events of every body kind, with keys, headers and content types that need quoting in an
 * array literal, repeated keys, and the extreme event times.
 */
export const VARIED_OUTBOX_EVENTS: readonly OutboxEvent[] = [
  { key: 'k1', json: { a: 1, s: 'é "q" \\ ,{}' }, eventTime: 1_000, headers: { tenant: 't1' } },
  { key: 'NULL', msgpack: { b: [1, 2], c: 'x' }, eventTime: new Date(-5) },
  {
    key: 'a "quoted", {braced} \\ key',
    bytes: Uint8Array.from([0, 1, 2, 255, 92, 34]),
    contentType: 'application/x-test; q="1"',
    eventTime: 8.64e15,
    headers: { 'a"b': 'c\\d', 'e,f': '{}', empty: '', ü: '日本' },
  },
  { key: 'k1', bytes: new Uint8Array(0), eventTime: Date.UTC(-4712, 0, 1) },
  { key: ' ', json: null, eventTime: 0, headers: {} },
  { key: '日本', json: 'NULL', eventTime: 3 },
  { key: 'k1', msgpack: null, eventTime: 4 },
];

/** Events `writeOutbox` refuses with a `ConfigError`, one for each of its rules. */
export const BAD_OUTBOX_EVENTS: readonly unknown[] = [
  null,
  'k',
  { key: '', json: 1 },
  { json: 1 },
  { key: 7, json: 1 },
  { key: 'k', json: 1, bytes: Uint8Array.of(1) },
  { key: 'k' },
  { key: 'k', json: 1, headers: { 'sw-x': 'v' } },
  { key: 'k', json: 1, headers: { n: 1 } },
  { key: 'k', json: 1, headers: 'h' },
  { key: 'k', json: 1, eventTime: Number.NaN },
  { key: 'k', json: 1, eventTime: 8.64e15 + 1 },
  { key: 'k', json: 1, eventTime: new Date(Number.NaN) },
  { key: 'k', json: { big: 1n } },
  { key: 'k', json: undefined },
  { key: 'k', bytes: [1, 2] },
  { key: 'k', bytes: Uint8Array.of(1), contentType: '' },
];
