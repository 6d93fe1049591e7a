// The order rules of the source and window stages are compile errors (src/dsl/builder-stage.ts):
// each `@ts-expect-error` below is a call out of order that must not compile (`npm test`
// type-checks this file; a directive with no error under it fails the type check), and each
// still throws the builder's ConfigError when it runs, for JavaScript callers. The calls in the
// right order, and the ways of holding a builder in a variable, compile.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { aggregate, ConfigError, tumbling, type PipelineBuilder } from '../../../src/index.js';
import type {
  EventTimeOrKeySet,
  EventTimeOrKeySetAndWindowChosen,
  WindowChosen,
} from '../../../src/dsl/builder-stage.js';
import { brokerWithReadings } from '../../support/jobs/memory-job.js';

interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

const broker = brokerWithReadings([]);
const source = broker.source('source');
const start = () => aggregate<Reading>(source);
const byValue = (r: Reading) => r.value;

describe('a call out of order', () => {
  it('does not compile after .eventTime() or .key(): .decode(), .filter(), .map(), .transform()', () => {
    const timed = start().eventTime((r) => r.t);
    const keyed = start().key((r) => r.sensor);
    const wrong = [
      // @ts-expect-error -- .map() reads the value .eventTime() already read
      () => timed.map(byValue),
      // @ts-expect-error -- as above, after .key()
      () => keyed.map(byValue),
      // @ts-expect-error -- .filter() after .eventTime()
      () => timed.filter(() => true),
      // @ts-expect-error -- .decode() after .key()
      () => keyed.decode('msgpack'),
      // @ts-expect-error -- .transform() after .eventTime()
      () => timed.transform(() => new Uint8Array(1)),
      // @ts-expect-error -- after a window and .key() as well
      () => start().tumbling('1m').key(String).map(byValue),
    ];
    for (const call of wrong) expect(call).toThrow(ConfigError);
  });

  it('does not compile after a window method: a second window, .compact(), .transform()', () => {
    const windowed = start().tumbling('1m');
    const kept = start().session('5s').late('drop').onError('dead-letter');
    const empty = () => new Uint8Array();
    const wrong = [
      // @ts-expect-error -- a second window
      () => windowed.count(3),
      // @ts-expect-error -- a second window, through .window()
      () => windowed.window(tumbling('1h')),
      // @ts-expect-error -- a second window, after methods that keep the stage
      () => kept.hopping('1m', '10s', { grace: '0s' }),
      // @ts-expect-error -- .compact() chooses a window of its own
      () => windowed.compact((r) => r.sensor, { count: 2 }),
      // @ts-expect-error -- .transform() has no window
      () => start().count(1).transform(empty),
      // @ts-expect-error -- a second window after .key() in between
      () => start().count(2).key(String).session('5s'),
    ];
    for (const call of wrong) expect(call).toThrow(ConfigError);
  });
});

describe('the calls in order', () => {
  it('compile, whichever way the window, event time and key are interleaved', () => {
    expectTypeOf(start().eventTime((r) => r.t)).toEqualTypeOf<
      PipelineBuilder<Reading, EventTimeOrKeySet>
    >();
    expectTypeOf(
      start()
        .map((r) => r)
        .count(3),
    ).toEqualTypeOf<PipelineBuilder<Reading, WindowChosen>>();
    expectTypeOf(
      start()
        .tumbling('1m')
        .map((r) => r)
        .key((r) => r.sensor),
    ).toEqualTypeOf<PipelineBuilder<Reading, EventTimeOrKeySetAndWindowChosen>>();
    expectTypeOf(
      start()
        .key((r) => r.sensor)
        .tumbling('1m', { grace: '5s' })
        .eventTime((r) => r.t)
        .late('drop')
        .emit('final')
        .maxOutOfOrderness('1s'),
    ).toEqualTypeOf<PipelineBuilder<Reading, EventTimeOrKeySetAndWindowChosen>>();
    // The source stage, before any window: the builder `aggregate()` returns, unrecorded.
    expectTypeOf(start().decode('msgpack').filter(Boolean).map(byValue)).toEqualTypeOf<
      PipelineBuilder<number>
    >();
    expect(() =>
      start()
        .key(String)
        .count(3)
        .reduce((a) => a),
    ).not.toThrow();
  });

  it('compile when a variable holds the builder and is given later stages', () => {
    // Typed with the builder aggregate() returns: every call compiles, checked when it runs.
    let unrecorded: PipelineBuilder<Reading> = start();
    unrecorded = unrecorded.eventTime((r) => r.t);
    unrecorded = unrecorded.tumbling('1m');
    expect(() => unrecorded.map(byValue)).toThrow(ConfigError);
    // Typed with an earlier stage: a later one is one of it.
    let timed = start().eventTime((r) => r.t);
    timed = timed.tumbling('1m');
    timed = timed.key((r) => r.sensor);
    expect(() => timed.reduce((a) => a)).not.toThrow();
    const reusable = (p: PipelineBuilder<Reading>) => p.count(3);
    expect(() => reusable(start().key(String))).not.toThrow();
  });
});
