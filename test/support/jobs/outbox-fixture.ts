// Helpers for the outbox relay's tests: what a relay's message says, read back from its bytes,
// and the check that a stream holds exactly the committed rows, once each, in relay order.
import type { PGlite } from '@electric-sql/pglite';
import type { Registry } from 'prom-client';
import { expect } from 'vitest';
import { decodeMessage } from '../../../src/codecs/amqp-message.js';
import { partitionIndexFor } from '../../../src/common/partition-routing.js';
import { OutboxProperty, type RelayMark } from '../../../src/outbox/outbox-message.js';
import type { OutboxEvent } from '../../../src/outbox/outbox-event.js';
import { writeOutbox } from '../../../src/outbox/outbox-write.js';
import { ResultProperty } from '../../../src/result-format/result-format.js';

/** One relay message, decoded. */
export interface SeenOutboxMessage {
  readonly key: string;
  readonly id: bigint;
  readonly txid: bigint;
  /** The row's own headers (the relay's 'sw-' properties left out). */
  readonly headers: Record<string, string>;
  readonly contentType: string | undefined;
  readonly creationTime: number | undefined;
  readonly body: Buffer;
  /** What a message on a super stream carries beside the row; undefined on a stream. */
  readonly mark: RelayMark | undefined;
}

/** Decodes one message a relay published. */
export function seenOutboxMessage(bytes: Uint8Array): SeenOutboxMessage {
  const message = decodeMessage(bytes);
  const properties = (message.applicationProperties ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(properties)) {
    if (!name.startsWith('sw-')) headers[name] = String(value);
  }
  const { body } = message;
  if (body?.type !== 'data' || body.sections.length !== 1) {
    throw new Error(`an outbox message has one data section, got ${JSON.stringify(body)}`);
  }
  return {
    key: String(properties[OutboxProperty.KEY]),
    id: BigInt(String(properties[OutboxProperty.ID])),
    txid: BigInt(String(properties[OutboxProperty.TXID])),
    headers,
    contentType: message.properties?.contentType,
    creationTime: message.properties?.creationTime,
    body: Buffer.from(body.sections[0] as Uint8Array),
    mark:
      properties[OutboxProperty.THROUGH] === undefined
        ? undefined
        : {
            producer: String(properties[ResultProperty.producer]),
            publishingId: BigInt(String(properties[ResultProperty.lastOffset])),
            through: BigInt(String(properties[OutboxProperty.THROUGH])),
          },
  };
}

/** A committed row as its writer recorded it: its id, key and body. */
export interface CommittedRow {
  readonly id: bigint;
  readonly key: string;
  readonly body: string;
}

/**
 * Checks that `seen` holds each of `committed` exactly once and nothing else, in relay order
 * ((txid, id) rising), and that each key's rows come in `keyOrder`, the order their writers
 * committed them (row ids per key, oldest commit first).
 */
export function expectExactlyCommitted(
  seen: readonly SeenOutboxMessage[],
  committed: readonly CommittedRow[],
  keyOrder?: ReadonlyMap<string, readonly bigint[]>,
): void {
  const ids = seen.map((message) => message.id);
  expect(new Set(ids).size, 'a row published twice').toBe(ids.length);
  expect([...ids].sort(compareBigint)).toEqual(committed.map((row) => row.id).sort(compareBigint));
  const byId = new Map(committed.map((row) => [row.id, row]));
  for (const message of seen) {
    const row = byId.get(message.id);
    expect(message.key).toBe(row?.key);
    expect(message.body.toString('utf8')).toBe(row?.body);
  }
  for (let i = 1; i < seen.length; i++) {
    const [a, b] = [seen[i - 1] as SeenOutboxMessage, seen[i] as SeenOutboxMessage];
    const rising = a.txid < b.txid || (a.txid === b.txid && a.id < b.id);
    expect(rising, `message ${i} (txid ${b.txid}, id ${b.id}) after (${a.txid}, ${a.id})`).toBe(
      true,
    );
  }
  if (keyOrder === undefined) return;
  const streamOrder = new Map<string, bigint[]>();
  for (const message of seen) {
    const list = streamOrder.get(message.key) ?? [];
    list.push(message.id);
    streamOrder.set(message.key, list);
  }
  for (const [key, order] of keyOrder) {
    expect(streamOrder.get(key) ?? [], `key '${key}' in commit order`).toEqual(order);
  }
}

/**
 * Checks that each partition of a super stream (`partitions`: each one's messages, in the
 * super stream's order) holds exactly the committed rows whose key routes to it, as
 * `expectExactlyCommitted` checks a stream, each key's rows in `keyOrder` (default: the order
 * of `committed`, right for one writer).
 */
export function expectExactlyOnPartitions(
  partitions: readonly (readonly SeenOutboxMessage[])[],
  committed: readonly CommittedRow[],
  keyOrder: ReadonlyMap<string, readonly bigint[]> = keyOrderOf(committed),
): void {
  const routed = (key: string, index: number): boolean =>
    partitionIndexFor(key, partitions.length) === index;
  partitions.forEach((seen, index) => {
    expectExactlyCommitted(
      seen,
      committed.filter((row) => routed(row.key, index)),
      new Map([...keyOrder].filter(([key]) => routed(key, index))),
    );
  });
}

/** Each key's row ids in the order of `rows`. */
export function keyOrderOf(rows: readonly CommittedRow[]): Map<string, bigint[]> {
  const order = new Map<string, bigint[]>();
  for (const row of rows) order.set(row.key, [...(order.get(row.key) ?? []), row.id]);
  return order;
}

/** `count` keys ('key-<n>') that route to partition `partition` of `partitions`. */
export function keysRoutedTo(partition: number, partitions: number, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    if (partitionIndexFor(`key-${i}`, partitions) === partition) keys.push(`key-${i}`);
  }
  return keys;
}

export function compareBigint(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Resolves once `condition()` holds, polling; rejects after `ms`. */
export async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

class Rollback extends Error {}

/**
 * Writes `events` to the outbox `table` in one PGlite transaction, rolled back when `rollback`.
 * Resolves with the rows committed, each body as the stream shows it ([] when rolled back).
 */
export async function writeOnPglite(
  db: PGlite,
  table: string,
  events: readonly OutboxEvent[],
  rollback: boolean,
): Promise<CommittedRow[]> {
  const rows: CommittedRow[] = [];
  try {
    await db.transaction(async (tx) => {
      for (const event of events) {
        const id = await writeOutbox(tx, event, { table });
        rows.push({ id, key: event.key, body: bodyText(event) });
      }
      if (rollback) throw new Rollback();
    });
  } catch (error) {
    if (error instanceof Rollback) return [];
    throw error;
  }
  return rows;
}

/** An event's body as `seenOutboxMessage` reads it back from the stream. */
function bodyText(event: OutboxEvent): string {
  if ('json' in event && event.json !== undefined) return JSON.stringify(event.json);
  if ('bytes' in event && event.bytes !== undefined) return Buffer.from(event.bytes).toString();
  return '<msgpack>';
}

/** The value of the relay series `name` of `relay` on `registry` (NaN when absent). */
export async function relaySeries(
  registry: Registry,
  name: string,
  relay: string,
): Promise<number> {
  const line = (await registry.metrics())
    .split('\n')
    .find((l) => l.startsWith(`stream_windows_relay_${name}{relay="${relay}"`));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}
