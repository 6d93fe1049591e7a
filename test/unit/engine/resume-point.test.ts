// The resume point's rules (src/engine/resume/resume-point.ts), against a target that answers
// what a test tells it: no runner, no broker.
import { describe, expect, it, vi } from 'vitest';
import {
  JobDefinitionError,
  ProducerRenamedError,
  RecoveryError,
} from '../../../src/common/errors.js';
import type { Logger } from '../../../src/common/logger.js';
import type { ResultWhere, Source, Target } from '../../../src/ports/ports.js';
import { CLOCK_SKEW_MARGIN_MS } from '../../../src/engine/resume/written-after.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { lastWriteId, writeId } from '../../../src/result-format/publishing-id.js';
import { encodeStep } from '../../../src/result-format/step-writes.js';
import { ResultProperty } from '../../../src/result-format/result-format.js';
import { decodeMessage, encodeMessage } from '../../../src/codecs/amqp-message.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import {
  ResumePoint,
  isStoredStepZero,
  resumesAtOne,
  stepZeroStored,
} from '../../../src/engine/resume/resume-point.js';
import type { Processor } from '../../../src/engine/processor.js';
import { count } from '../../../src/windows/count.js';
import { tumbling } from '../../../src/windows/tumbling.js';
import { processorFor } from './readings-chunks.js';

interface Broker {
  readonly last: bigint;
  readonly published: boolean;
  /** The producer's stored results by publishing id. */
  readonly results?: ReadonlyMap<bigint, Uint8Array>;
  readonly formerLast?: bigint;
  /** The source's chunk timestamps by offset (`Source.timestampAt`); absent: it has none. */
  readonly stamped?: ReadonlyMap<bigint, number> | 'fails';
}

function targetOf(
  broker: Broker,
): Target & { readonly reads: bigint[]; readonly bounds: (number | undefined)[] } {
  const reads: bigint[] = [];
  /** The bound each read asked for (undefined: none known). */
  const bounds: (number | undefined)[] = [];
  return {
    stream: 'totals',
    producer: 'job',
    reads,
    bounds,
    lastPublishingId: () => Promise.resolve(broker.last),
    lastPublishingIdOf: () => Promise.resolve(broker.formerLast ?? 0n),
    hasPublished: () => Promise.resolve(broker.published),
    readResult: async (id: bigint, where?: ResultWhere) => {
      reads.push(id);
      bounds.push(await where?.writtenAfterMs?.());
      return broker.results?.get(id);
    },
  } as unknown as Target & { readonly reads: bigint[]; readonly bounds: (number | undefined)[] };
}

function sourceOf(broker: Broker): Source {
  const { stamped } = broker;
  const source = { stream: 'readings' } as unknown as Source;
  if (stamped === undefined) return source;
  return {
    ...source,
    timestampAt: (offset: bigint) =>
      stamped === 'fails'
        ? Promise.reject(new Error('connection lost'))
        : Promise.resolve(stamped.get(offset)),
  };
}

const quiet = { warn: vi.fn(), info: vi.fn(), error: vi.fn() } as unknown as Logger;

async function resume(
  broker: Broker,
  processor: Processor<number>,
  options: {
    definition?: string;
    allowDefinitionChange?: boolean;
    formerProducer?: string;
    logger?: Logger;
  } = {},
) {
  const target = targetOf(broker);
  const point = new ResumePoint({
    source: sourceOf(broker),
    target,
    logger: options.logger ?? quiet,
    where: () => ({ job: 'totals-job' }),
    definition:
      options.definition === undefined
        ? undefined
        : { current: options.definition, allowChange: options.allowDefinitionChange ?? false },
    formerProducer: options.formerProducer,
  });
  const hasPublished = (): Promise<boolean> => target.hasPublished();
  const found = await point.read(processor, hasPublished);
  return { found, target, hasPublished };
}

/** A result as the job writes it, with `overrides` (a flush, a recovery state). */
function resultBytes(lastOffset: bigint, overrides: Partial<StepResult<number>> = {}): Uint8Array {
  const result: StepResult<number> = {
    firstOffset: 0n,
    lastOffset,
    messages: 1,
    window: { start: 0, end: 60_000 },
    outputs: [{ key: 'a', count: 1, value: 1, start: 0, end: 60_000 }],
    late: [],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [],
    ...overrides,
  };
  const metadata = {
    source: 'readings',
    producer: 'job',
    window: 'tumbling(1m)',
    definition: 'v1',
  };
  const [bytes] = encodeResult(result, metadata, 'single');
  return bytes as Uint8Array;
}

describe('the resume point of a step job', () => {
  it('is the last id + 1', async () => {
    const { found } = await resume({ last: 9n, published: true }, processorFor(count(2)));
    expect(found).toMatchObject({ last: 9n, from: 10n });
  });

  it('is the first offset for a last id of 0, and moves to 1 only past a removed head when the producer published', async () => {
    const notPublished = await resume({ last: 0n, published: false }, processorFor(count(2)));
    expect(notPublished.found).toMatchObject({ from: 'first', last: 0n, lastId: 0n });
    expect(await resumesAtOne(notPublished.found, 5n, notPublished.hasPublished)).toBe(false);

    const published = await resume({ last: 0n, published: true }, processorFor(count(2)));
    expect(published.found.from).toBe('first');
    expect(await resumesAtOne(published.found, 5n, published.hasPublished)).toBe(true);
    // A head that is still there (offset 0 or 1 first) is read as it comes.
    expect(await resumesAtOne(published.found, 1n, published.hasPublished)).toBe(false);

    const later = await resume({ last: 3n, published: true }, processorFor(count(2)));
    expect(await resumesAtOne(later.found, 5n, later.hasPublished)).toBe(false);
  });

  it('takes the step of offset 0 for one an earlier version stored under id 0 only while no step is stored and the producer published', async () => {
    const published = await resume({ last: 0n, published: true }, processorFor(count(2)));
    const never = await resume({ last: 0n, published: false }, processorFor(count(2)));
    const later = await resume({ last: 3n, published: true }, processorFor(count(2)));
    expect(await isStoredStepZero(published.found, 0n, stepZeroStored)).toBe(true);
    expect(await isStoredStepZero(published.found, 1n, stepZeroStored)).toBe(false);
    expect(await isStoredStepZero(never.found, 0n, stepZeroStored)).toBe(false);
    expect(await isStoredStepZero(later.found, 0n, stepZeroStored)).toBe(false);
  });

  it('knows from a last id above 0 that the producer published, without a scan', async () => {
    // The target's scan answers false: asked, it would be wrong.
    for (const last of [lastWriteId(9n), 9n]) {
      const { found } = await resume({ last, published: false }, processorFor(count(2)));
      expect(found).toMatchObject({ last: 9n, lastId: last, from: 10n });
      expect(await found.hasPublished()).toBe(true);
    }
  });

  it('reads no result when neither the processor nor the definition check needs one', async () => {
    const { target } = await resume({ last: 0n, published: false }, processorFor(count(2)), {
      definition: 'v1',
    });
    expect(target.reads).toEqual([]);
  });

  it('stops on a last result of another job definition', async () => {
    const results = new Map([[4n, resultBytes(4n)]]);
    const broker = { last: 4n, published: true, results };
    await expect(resume(broker, processorFor(count(2)), { definition: 'v2' })).rejects.toThrow(
      JobDefinitionError,
    );
    await expect(
      resume(broker, processorFor(count(2)), { definition: 'v1' }),
    ).resolves.toBeDefined();
  });

  it('goes on from a last result of another definition when the change was asked for, saying so', async () => {
    const results = new Map([[4n, resultBytes(4n)]]);
    const warn = vi.fn();
    const logger = { ...quiet, warn } as unknown as Logger;
    const { found } = await resume({ last: 4n, published: true, results }, processorFor(count(2)), {
      definition: 'v2',
      allowDefinitionChange: true,
      logger,
    });
    expect(found).toMatchObject({ last: 4n, from: 5n });
    expect(warn).toHaveBeenCalledWith(
      { job: 'totals-job', lastPublishingId: '4', found: 'v1', definition: 'v2' },
      expect.stringContaining('written by another job definition: going on from it'),
    );
  });

  it('stops at a last id of 0 when the former producer name published', async () => {
    const broker = { last: 0n, published: false, formerLast: 12n };
    await expect(
      resume(broker, processorFor(count(2)), { formerProducer: 'job-old' }),
    ).rejects.toThrow(ProducerRenamedError);
  });

  it('resumes a flushing job at 1 when the producer published under id 0', async () => {
    const flushing = { flushes: true, resultFormat: true };
    const results = new Map([[0n, resultBytes(0n, { flushed: true })]]);
    const { found } = await resume(
      { last: 0n, published: true, results },
      processorFor(tumbling('1m'), { flushing }),
    );
    expect(found).toMatchObject({ from: 1n, published: true });
    const never = await resume(
      { last: 0n, published: false },
      processorFor(tumbling('1m'), { flushing }),
    );
    expect(never.found).toMatchObject({ from: 'first', published: false });
  });
});

describe('where the last result is looked for', () => {
  const results = new Map([[4n, resultBytes(4n)]]);

  it("is after the last id's source chunk was stored, less the margin for clock skew", async () => {
    const stamped = new Map([[4n, 1_700_000_000_000]]);
    const broker = { last: 4n, published: true, results, stamped };
    const { target } = await resume(broker, processorFor(count(2)), { definition: 'v1' });
    expect(target.bounds).toEqual([1_700_000_000_000 - CLOCK_SKEW_MARGIN_MS]);
  });

  it('is anywhere when the source cannot tell: no timestamps, the offset not stored, a failure', async () => {
    for (const stamped of [undefined, new Map<bigint, number>(), 'fails' as const]) {
      const broker = { last: 4n, published: true, results, stamped };
      const { target, found } = await resume(broker, processorFor(count(2)), { definition: 'v1' });
      expect(target.bounds).toEqual([undefined]);
      expect(found).toMatchObject({ last: 4n, from: 5n });
    }
  });
});

describe('the resume point of an event-time job', () => {
  const window = tumbling('1m', { grace: 0 });

  it("is the offset its last result's recovery state names", async () => {
    const recovery = { watermark: 61_000, offset: 3n, offsetWatermark: 1_000 };
    const id = lastWriteId(5n);
    const results = new Map([[id, resultBytes(5n, { recovery })]]);
    const { found } = await resume({ last: id, published: true, results }, processorFor(window));
    expect(found).toEqual({
      lastPublishingId: id,
      last: 5n,
      lastId: id,
      from: 3n,
      published: true,
      atOneAfterRetention: false,
      hasPublished: expect.any(Function),
    });
    expect(await found.hasPublished()).toBe(true);
  });

  it('stops when the result under the last id is gone', async () => {
    await expect(resume({ last: 5n, published: true }, processorFor(window))).rejects.toThrow(
      RecoveryError,
    );
  });

  it('reads from the first offset when it never published, and never moves to 1', async () => {
    const { found, hasPublished } = await resume(
      { last: 0n, published: true },
      processorFor(window),
    );
    expect(found).toMatchObject({ from: 'first', published: false });
    expect(await resumesAtOne(found, 5n, hasPublished)).toBe(false);
  });
});

describe('the resume point after a crash between the writes of a step', () => {
  /** The writes of a step at offset 9 of 40 outputs, cut at 1 KB, after the step `previous`. */
  function partsOf(previous: bigint): Uint8Array[][] {
    const outputs = Array.from({ length: 40 }, (_, i) => ({
      key: `sensor-${i}`,
      count: 1,
      value: i,
      start: 0,
      end: 60_000,
    }));
    const result: StepResult<number> = {
      firstOffset: 6n,
      lastOffset: 9n,
      messages: 4,
      window: { start: 0, end: 60_000 },
      outputs,
      late: [],
      lateDropped: 0,
      filtered: 0,
      deadLetters: [],
    };
    const metadata = { source: 'readings', producer: 'job', window: 'count(2)' };
    const writes = encodeStep(result, metadata, 'single', 'msgpack', 1_024, previous);
    expect(writes.length).toBeGreaterThan(1);
    return writes;
  }
  const firstPart = writeId(9n, 0, 2);

  it('goes on from the step before it, which its stored part names', async () => {
    const [part] = partsOf(lastWriteId(5n));
    const results = new Map([[firstPart, part?.[0] as Uint8Array]]);
    const { found } = await resume(
      { last: firstPart, published: true, results },
      processorFor(count(2)),
    );
    expect(found).toMatchObject({
      lastPublishingId: firstPart,
      last: 5n,
      lastId: lastWriteId(5n),
      from: 6n,
    });
  });

  it('reads from the first offset when no step came before, though the target holds the part', async () => {
    const [part] = partsOf(0n);
    const results = new Map([[firstPart, part?.[0] as Uint8Array]]);
    const { found } = await resume(
      { last: firstPart, published: true, results },
      processorFor(count(2)),
    );
    expect(found).toMatchObject({ last: 0n, lastId: 0n, from: 'first' });
    expect(await found.hasPublished()).toBe(false);
  });

  it('stops when its part is gone or cannot be read', async () => {
    for (const [results, reason] of [
      [new Map<bigint, Uint8Array>(), 'the target holds no part of it under that id'],
      [new Map([[firstPart, new Uint8Array([1, 2, 3])]]), 'whose part cannot be read'],
    ] as const) {
      const failure = resume({ last: firstPart, published: true, results }, processorFor(count(2)));
      await expect(failure).rejects.toThrow(RecoveryError);
      await expect(failure).rejects.toMatchObject({
        publishingId: firstPart,
        message: expect.stringContaining(reason),
      });
    }
  });
});

describe('the resume point of an event-time job whose last step wrote its open counts in slices', () => {
  const window = tumbling('1m', { grace: 0 });
  const LAST = 4_000n;
  /** The writes of a step at offset 4,000 leaving 600 count windows open, cut at 4 KB. */
  const writes = encodeStep(
    {
      firstOffset: LAST,
      lastOffset: LAST,
      messages: 1,
      window: { start: 0, end: 60_000 },
      outputs: [],
      late: [],
      lateDropped: 0,
      filtered: 0,
      deadLetters: [],
      recovery: {
        watermark: 10,
        offset: 3_000n,
        offsetWatermark: Number.NEGATIVE_INFINITY,
        openCounts: Array.from({ length: 600 }, (_, i) => [`key-${i}`, BigInt(i)]),
      },
    },
    { source: 'readings', producer: 'job', window: 'tumbling(1m)', definition: 'v1' },
    'single',
    'msgpack',
    4_071,
    0n,
  ).map((write) => write[0] as Uint8Array);
  const ids = writes.map((_, index) => writeId(LAST, index, writes.length));
  const stored = (changes: readonly (readonly [number, Uint8Array | undefined])[] = []) => {
    const results = new Map(ids.map((id, index) => [id, writes[index] as Uint8Array]));
    for (const [index, bytes] of changes) {
      if (bytes === undefined) results.delete(ids[index] as bigint);
      else results.set(ids[index] as bigint, bytes);
    }
    return results;
  };
  const last = lastWriteId(LAST);

  it('joins them from their writes', async () => {
    expect(writes.length).toBeGreaterThan(2);
    const { found, target } = await resume(
      { last, published: true, results: stored() },
      processorFor(window),
    );
    expect(found).toMatchObject({ last: LAST, from: 3_000n });
    expect(target.reads).toEqual([last, ...ids.slice(0, -1)]);
  });

  it('stops, naming the write, when a slice is gone, unreadable, or not in the message under its id', async () => {
    const withoutSlices = resultBytes(LAST, {
      recovery: { watermark: 10, offset: 0n, offsetWatermark: 0 },
    });
    for (const [bytes, reason] of [
      [undefined, 'slice 0 is not in the target under that id'],
      [new Uint8Array([1, 2, 3]), 'slice 0 cannot be read'],
      [withoutSlices, 'slice 0 is not in the message under that id'],
      // Write 1's message (slice 1) under write 0's id.
      [writes[1], 'slice 0 is not in the message under that id'],
    ] as const) {
      const failure = resume(
        { last, published: true, results: stored([[0, bytes]]) },
        processorFor(window),
      );
      await expect(failure).rejects.toThrow(RecoveryError);
      await expect(failure).rejects.toMatchObject({
        publishingId: ids[0],
        message: expect.stringContaining(reason),
      });
    }
  });

  it('stops when the slices do not join into the list', async () => {
    const message = decodeMessage(writes[0] as Uint8Array);
    const spoiled = encodeMessage({
      ...message,
      applicationProperties: {
        ...message.applicationProperties,
        [ResultProperty.openCounts]: '[["not-closed"',
      },
    });
    const failure = resume(
      { last, published: true, results: stored([[0, spoiled]]) },
      processorFor(window),
    );
    await expect(failure).rejects.toMatchObject({
      publishingId: last,
      message: expect.stringContaining(`joined from ${writes.length} slices, cannot be read`),
    });
  });

  it('stops when its last result names slices but no write of a step, or no recovery state, to find them in', async () => {
    const lastWrite = writes.at(-1) as Uint8Array;
    // Under an id an earlier version wrote (the offset itself).
    const underOffset = new Map([[LAST, lastWrite]]);
    const offsetFailure = resume(
      { last: LAST, published: true, results: underOffset },
      processorFor(window),
    );
    await expect(offsetFailure).rejects.toMatchObject({
      publishingId: LAST,
      message: expect.stringContaining('no write of a step to find them'),
    });
    // Without the recovery state the slices belong to.
    const message = decodeMessage(lastWrite);
    const { [ResultProperty.resumeOffset]: _, ...withoutRecovery } =
      message.applicationProperties ?? {};
    const spoiled = encodeMessage({ ...message, applicationProperties: withoutRecovery });
    const recoveryFailure = resume(
      { last, published: true, results: stored([[ids.length - 1, spoiled]]) },
      processorFor(window),
    );
    await expect(recoveryFailure).rejects.toMatchObject({
      publishingId: last,
      message: expect.stringContaining('no write of a step to find them'),
    });
  });

  it('reads none of them for a step job, which needs only the definition', async () => {
    const results = new Map([[last, writes.at(-1) as Uint8Array]]);
    const { found, target } = await resume(
      { last, published: true, results },
      processorFor(count(2)),
      {
        definition: 'v1',
      },
    );
    expect(found).toMatchObject({ last: LAST, from: LAST + 1n });
    expect(target.reads).toEqual([last]);
  });
});

describe('an unreadable last result', () => {
  const garbage = new Map([[lastWriteId(5n), new Uint8Array([1, 2, 3])]]);

  it('stops an event-time job, which needs its recovery state', async () => {
    const failure = resume(
      { last: lastWriteId(5n), published: true, results: garbage },
      processorFor(tumbling('1m', { grace: 0 })),
    );
    await expect(failure).rejects.toThrow(RecoveryError);
    await expect(failure).rejects.toThrow('its result cannot be read');
  });

  it('costs a step job that flushes only the mark of continuing its window: a warning naming the id', async () => {
    const warn = vi.fn();
    const logger = { ...quiet, warn } as unknown as Logger;
    const { found } = await resume(
      { last: lastWriteId(5n), published: true, results: garbage },
      processorFor(tumbling('1m'), { flushing: { flushes: true, resultFormat: true } }),
      { logger },
    );
    expect(found).toMatchObject({ last: 5n, from: 6n });
    expect(warn).toHaveBeenCalledWith(
      { job: 'totals-job', lastPublishingId: String(lastWriteId(5n)) },
      expect.stringContaining("the producer's last result cannot be read"),
    );
  });
});
