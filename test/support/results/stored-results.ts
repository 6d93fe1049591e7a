// Results as the runner writes them, for the tests of `Target.readResult`.
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { type PackMode } from '../../../src/result-format/result-format.js';
import type { Target } from '../../../src/index.js';
import type { RabbitMQ } from '../../../src/rabbitmq/connection.js';
import type { RabbitTarget } from '../../../src/rabbitmq/write/target.js';

/**
 * The messages of `producer`'s result for the step ending at offset `lastOffset`, as
 * `encodeResult` makes them: with `outputs` outputs ('batch' packing: one message each).
 */
export function resultMessages(
  producer: string,
  lastOffset: bigint,
  pack: PackMode = 'sections',
  outputs = 1,
): Uint8Array[] {
  return encodeResult(
    {
      firstOffset: lastOffset,
      lastOffset,
      messages: 1,
      window: { start: 0, end: 60_000 },
      outputs: Array.from({ length: outputs }, (_, i) => ({
        key: `key-${i}`,
        count: 1,
        value: Number(lastOffset),
      })),
      late: [],
      lateDropped: 0,
      filtered: 0,
      deadLetters: [],
    },
    { source: 'readings', producer, window: 'count(1)' },
    pack,
  );
}

/** One write: `producer`'s result `id`, with the result's packing and outputs. */
export interface ResultWrite {
  readonly producer: string;
  readonly id: bigint;
  readonly pack?: PackMode;
  readonly outputs?: number;
}

/**
 * A target per producer on `stream`, each made on its first use; `close` closes them all. They
 * keep no result hints (`resultHintMs: 0`): a hint's tracking chunk would take an offset among
 * the results the tests lay out.
 */
export function producerTargets(
  rabbit: RabbitMQ,
  stream: string,
): { targetOf: (producer: string) => RabbitTarget; close: () => Promise<void> } {
  const targets = new Map<string, RabbitTarget>();
  return {
    targetOf: (producer) => {
      let target = targets.get(producer);
      if (target === undefined) {
        target = rabbit.target(stream, { producer, resultHintMs: 0 });
        targets.set(producer, target);
      }
      return target;
    },
    close: async () => {
      for (const target of targets.values()) await target.close();
    },
  };
}

/**
 * Publishes `writes` in order, each through its producer's target and under its own id as
 * the runner does, pipelined; resolves once all are confirmed. Writes of different producers
 * may be stored in another order than given (each target declares its producer first).
 * `targetOf` is asked once per producer: a broker refuses a second producer of one name on one
 * connection.
 */
export async function publishResults(
  writes: readonly ResultWrite[],
  targetOf: (producer: string) => Target,
): Promise<void> {
  const targets = new Map<string, Target>();
  const of = (producer: string): Target => {
    const target = targets.get(producer) ?? targetOf(producer);
    targets.set(producer, target);
    return target;
  };
  await Promise.all(
    writes.map((write) =>
      of(write.producer).publish(
        write.id,
        resultMessages(write.producer, write.id, write.pack, write.outputs),
      ),
    ),
  );
}

/**
 * `count` results of the producers `others`, taking turns, with ids from `firstId` up:
 * what other jobs writing to the same target add after a result.
 */
export function othersResults(
  others: readonly string[],
  count: number,
  firstId: bigint,
): ResultWrite[] {
  return Array.from({ length: count }, (_, i) => ({
    producer: others[i % others.length] as string,
    id: firstId + BigInt(Math.floor(i / others.length)),
  }));
}

/**
 * Publishes each batch of writes to `stream` after the one before is confirmed, one target
 * per producer.
 */
export async function publishInTurn(
  rabbit: RabbitMQ,
  stream: string,
  batches: readonly ResultWrite[][],
): Promise<void> {
  const { targetOf, close } = producerTargets(rabbit, stream);
  try {
    for (const batch of batches) await publishResults(batch, targetOf);
  } finally {
    await close();
  }
}

/** One write of a result search's stream (the search tests): `producer`'s result `id`. */
export interface SearchWrite {
  readonly producer: string;
  readonly id: bigint;
  readonly pack: PackMode;
}

/** `count` one-message results of two other producers, ids from `firstId` up in turn. */
export function otherWrites(count: number, firstId: bigint): SearchWrite[] {
  return Array.from({ length: count }, (_, i) => ({
    producer: i % 2 === 0 ? 'billing' : 'audit',
    id: firstId + BigInt(i),
    pack: 'sections' as const,
  }));
}

/** The searched producer's ('ours') result `id`. */
export function ourWrite(id: bigint, pack: PackMode = 'sections'): SearchWrite {
  return { producer: 'ours', id, pack };
}
