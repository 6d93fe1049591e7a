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
import { lastWriteId } from '../../../src/result-format/publishing-id.js';
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
  options: { definition?: string; formerProducer?: string } = {},
) {
  const target = targetOf(broker);
  const point = new ResumePoint({
    source: sourceOf(broker),
    target,
    logger: quiet,
    where: () => ({}),
    definition:
      options.definition === undefined
        ? undefined
        : { current: options.definition, allowChange: false },
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
    expect(notPublished.found.from).toBe('first');
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
