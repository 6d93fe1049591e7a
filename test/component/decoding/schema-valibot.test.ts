// The same Standard Schema path with a real validator library (a devDependency only).
import * as v from 'valibot';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { aggregate, decodeResult, jsonMessage, type PipelineBuilder } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';

const Reading = v.object({
  sensor: v.pipe(v.string(), v.minLength(1)),
  value: v.pipe(
    v.string(),
    v.transform((text) => Number(text)),
  ),
  tags: v.optional(v.array(v.string()), []),
});

describe('decode with a valibot schema', () => {
  it('should aggregate the schema output and dead-letter values with the issues and paths', async () => {
    const broker = new MemoryBroker({ now: () => 0 });
    broker.createStream('source');
    broker.createStream('target');
    broker.append(
      'source',
      [
        jsonMessage({ sensor: 'a', value: '2' }),
        jsonMessage({ sensor: 'a', value: '3', tags: ['x', 4] }),
        jsonMessage({ sensor: 'b', value: '5', tags: ['y'] }),
      ],
      { timestamp: 0 },
    );
    const pipeline = aggregate(broker.source('source')).decode('json', Reading);
    expectTypeOf(pipeline).toEqualTypeOf<
      PipelineBuilder<{ sensor: string; value: number; tags: string[] }>
    >();
    await pipeline
      .onError('dead-letter')
      .count(3)
      .reduce((sum, r) => sum + r.value + r.tags.length, 0)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });

    const [result] = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(result?.outputs[0]).toMatchObject({ count: 2, value: 2 + 5 + 1 });
    expect(result?.deadLetters).toHaveLength(1);
    expect(result?.deadLetters[0]).toMatchObject({ offset: 1n, stage: 'decode' });
    expect(result?.deadLetters[0]?.error).toMatch(/^value does not match the schema: tags\[1\]: /);
  });
});
