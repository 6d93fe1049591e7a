// A job over several inputs (`aggregate(mergeInputs([...]))`, src/dsl/merge-inputs.ts): its window
// must be an event-time one closed by the watermark. Each `@ts-expect-error` below is a window
// that must not compile over several inputs (a step window, a count window, `.compact()`,
// `.transform()`), and each still throws the builder's ConfigError stating the rule when it
// runs, for JavaScript callers and builders whose type records nothing. mergeInputs checks its
// sources (plain ones, or fromResults ones, never both) and options.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  count,
  fromResults,
  MergedResults,
  mergeInputs,
  type OutputValue,
  session,
  tumbling,
  type PipelineBuilder,
} from '../../../src/index.js';
import type {
  SeveralInputs,
  SeveralInputsEventTimeOrKeySet,
  WindowChosen,
} from '../../../src/dsl/builder-stage.js';
import { MemoryBroker } from '../../../src/memory/index.js';

interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

const broker = new MemoryBroker();
for (const stream of ['a', 'b', 'target']) broker.createStream(stream);
const merged = () => aggregate<Reading>(mergeInputs([broker.source('a'), broker.source('b')]));
const RULE =
  "window must be an event-time window closed by the watermark (tumbling, hopping or session with a grace) for a job over several inputs: the merge orders their messages by event time, so a window of contiguous offsets or of counts has no meaning over it, given: 'tumbling(1m)'";

describe('a job over several inputs', () => {
  it('does not compile with a step or count window, and refuses one when it runs', () => {
    const keyed = merged().key((r) => r.sensor);
    const wrong = [
      // @ts-expect-error -- a step window: tumbling without a grace
      () => merged().tumbling('1m'),
      // @ts-expect-error -- a step window: session without a grace
      () => keyed.session('5s'),
      // @ts-expect-error -- a count window, per key or not
      () => merged().count(10, { perKey: true }),
      // @ts-expect-error -- a step window through .window()
      () => merged().window(tumbling('1m')),
      // @ts-expect-error -- a count window through .window()
      () => keyed.window(count(3, { perKey: true })),
      // @ts-expect-error -- .compact() is a step window
      () => merged().compact((r) => r.sensor, { count: 2 }),
      // @ts-expect-error -- .transform() is a count(1) step
      () => merged().transform(() => new Uint8Array(1)),
    ];
    for (const call of wrong) expect(call).toThrow(ConfigError);
    // A builder whose type records nothing takes the call, and is refused when it runs.
    const unrecorded: PipelineBuilder<Reading> = merged();
    expect(() => unrecorded.window(tumbling('1m'))).toThrow(RULE);
  });

  it('compiles with an event-time window closed by the watermark, before or after the key', () => {
    expectTypeOf(merged()).toEqualTypeOf<PipelineBuilder<Reading, SeveralInputs>>();
    expectTypeOf(merged().eventTime((r) => r.t)).toEqualTypeOf<
      PipelineBuilder<Reading, SeveralInputsEventTimeOrKeySet>
    >();
    expectTypeOf(
      merged()
        .filter((r) => r.value > 0)
        .tumbling('1m', { grace: '5s' }),
    ).toEqualTypeOf<PipelineBuilder<Reading, WindowChosen>>();
    const jobs = [
      () =>
        merged()
          .key((r) => r.sensor)
          .hopping('1m', '10s', { grace: 0 }),
      () =>
        merged()
          .eventTime((r) => r.t)
          .window(session('5s', { grace: '1s' })),
    ];
    for (const job of jobs) {
      expect(() =>
        job()
          .reduce((a) => a)
          .to(broker.target('target', { producer: 'p' })),
      ).not.toThrow();
    }
  });

  it("refuses what its merge does not record yet: 'dead-letter', a flush", () => {
    expect(() => merged().onError('dead-letter')).toThrow(
      "error policy must be 'stop' for a job over several inputs (a dead letter of a merge is not placed yet), given: 'dead-letter'",
    );
    const job = merged()
      .tumbling('1m', { grace: 0 })
      .reduce((a) => a);
    expect(() =>
      job.to(broker.target('target', { producer: 'p' }), { flush: { caughtUp: true } }),
    ).toThrow('flush does not apply to a job over several inputs yet');
    expect(() => job.toPartitions(() => broker.target('target', { producer: 'p' }))).toThrow(
      'toPartitions applies to a super-stream source only',
    );
  });
});

describe('a job over the results of other jobs', () => {
  const results = () =>
    aggregate(
      mergeInputs([
        fromResults<number>(broker.source('a'), { late: 'skip', deadLetters: 'skip' }),
        fromResults<number>(broker.source('b'), { late: 'count', deadLetters: 'skip' }),
      ]),
    );

  it("receives fromResults' values, over several inputs", () => {
    expectTypeOf(results()).toEqualTypeOf<PipelineBuilder<OutputValue<number>, SeveralInputs>>();
    const merged = mergeInputs([
      fromResults(broker.source('a'), { late: 'skip', deadLetters: 'skip' }),
    ]);
    expect(merged).toBeInstanceOf(MergedResults);
    expect(merged.stream).toBe('merge(a)');
    expect(() =>
      results()
        .key((v) => String(v.key))
        .tumbling('1m', { grace: 0 })
        .reduce((sum, v) => sum + v.value, 0)
        .to(broker.target('target', { producer: 'p' })),
    ).not.toThrow();
  });

  it('refuses what a fromResults source refuses: a decoder, a filter, a map', () => {
    const calls = [
      () => results().decode('msgpack'),
      () => results().filter(() => true),
      () => results().map((v) => v),
    ];
    for (const call of calls) expect(call).toThrow('does not apply to a fromResults source');
  });
});

describe('mergeInputs', () => {
  it('takes plain stream sources, each once, and an idleAfter', () => {
    expect(mergeInputs([broker.source('a')]).stream).toBe('merge(a)');
    expect(mergeInputs([broker.source('a'), broker.source('b')]).idleAfterMs).toBe(30_000);
    expect(mergeInputs([broker.source('a')], { idleAfter: '250ms' }).idleAfterMs).toBe(250);
    expect(mergeInputs([broker.source('a')], { idleAfter: 'never' }).idleAfterMs).toBeUndefined();
  });

  it('takes a first input read as a single active consumer: its group elects the instance', () => {
    const leader = broker.source('a', { singleActive: { name: 'g' } });
    expect(mergeInputs([leader, broker.source('b')]).inputs[0]?.group).toBe('g');
    const options = { late: 'skip', deadLetters: 'skip' } as const;
    const results = mergeInputs([
      fromResults(leader, options),
      fromResults(broker.source('b'), options),
    ]);
    expect(results.inputs[0]?.group).toBe('g');
  });

  it('refuses anything else, naming what and why', () => {
    const a = broker.source('a');
    const cases: [() => unknown, string][] = [
      [() => mergeInputs([]), 'mergeInputs must be given a non-empty array of sources'],
      [() => mergeInputs([a, broker.source('a')]), 'must name each stream once'],
      [() => mergeInputs([a, {} as never]), 'takes stream sources (broker.source(stream))'],
      [
        () =>
          mergeInputs([
            a,
            fromResults(broker.source('b'), { late: 'skip', deadLetters: 'skip' }) as never,
          ]),
        'mergeInputs takes either plain stream sources or fromResults sources, not both: a job\'s values are either messages it decodes or another job\'s outputs, given: ["source","fromResults"]',
      ],
      [
        () =>
          mergeInputs([
            fromResults(a, { late: 'skip', deadLetters: 'skip' }),
            fromResults(broker.source('a'), { late: 'count', deadLetters: 'skip' }),
          ]),
        'must name each stream once',
      ],
      [
        () =>
          mergeInputs([
            fromResults(a, { late: 'skip', deadLetters: 'skip' }),
            fromResults(broker.source('b', { singleActive: { name: 'g' } }), {
              late: 'skip',
              deadLetters: 'skip',
            }),
          ]),
        "takes a single active consumer source as its first input only ('b' in group 'g' is input 1)",
      ],
      [
        () => mergeInputs([a, broker.source('b', { singleActive: { name: 'g' } })]),
        "takes a single active consumer source as its first input only ('b' in group 'g' is input 1)",
      ],
      [() => mergeInputs([a], { idleAfter: 0 }), 'idleAfter'],
      [() => mergeInputs([a], { idleAfter: '1d' as never }), 'idleAfter'],
    ];
    for (const [call, message] of cases) {
      expect(call).toThrow(ConfigError);
      expect(call).toThrow(message);
    }
  });
});
