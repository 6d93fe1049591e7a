import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import {
  compaction,
  Placement,
  TriggerResult,
  type CompactionOptions,
} from '../../../src/windows/index.js';
import { drive, thrown, untyped } from './drive.js';

describe('compaction steps', () => {
  it('should end steps by count', () => {
    const spec = compaction({ count: 2 });
    expect(spec.kind).toBe('compact');
    expect(spec.describe()).toBe('compact(count 2)');
    expect(spec.hasEventTimeBounds).toBe(false);
    expect(drive(spec, [1, 2, 3]).fired).toEqual([{ times: [1, 2], start: 1, end: 3 }]);
  });

  it('should end steps every tumbling window', () => {
    const spec = compaction({ every: '1m' });
    expect(spec.describe()).toBe('compact(every 1m)');
    expect(spec.hasEventTimeBounds).toBe(true);
    expect(drive(spec, [0, 60_000]).fired).toEqual([{ times: [0], start: 0, end: 60_000 }]);
  });

  it('should pass tumbling options through to calendar steps', () => {
    const spec = compaction({ every: '1d', timeZone: 'Europe/Berlin', offset: '6h' });
    expect(spec.describe()).toBe('compact(every 1d, tz=Europe/Berlin, offset=6h)');
    const assigner = spec.createAssigner();
    assigner.open(Date.parse('2024-03-31T12:00:00Z'));
    expect(assigner.snapshot()).toEqual({
      start: Date.parse('2024-03-31T06:00:00+02:00'),
      end: Date.parse('2024-04-01T06:00:00+02:00'),
    });
  });

  it('should end steps at a gap in activity', () => {
    const spec = compaction({ gap: '30s' });
    expect(spec.describe()).toBe('compact(gap 30s)');
    const assigner = spec.createAssigner();
    assigner.open(0);
    expect(assigner.place(30_001)).toBe(Placement.Later);
    expect(spec.createTrigger().onElement()).toBe(TriggerResult.Continue);
  });

  it.each([{}, { count: 5, every: '1m' }, { every: '1m', gap: '1s' }, null])(
    'should reject %j as not exactly one step trigger',
    (options) => {
      const error = thrown(() => compaction(options as unknown as CompactionOptions));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(
        `compaction must set exactly one of count, every or gap, given: ${JSON.stringify(options)}`,
      );
    },
  );

  it('should name its own settings in errors', () => {
    expect(thrown(() => compaction({ count: 0 })).message).toBe(
      'compaction count must be > 0, given: 0',
    );
    expect(thrown(() => compaction({ every: '0s' })).message).toBe(
      "compaction every must be > 0, given: '0s'",
    );
    expect(thrown(() => compaction({ gap: untyped('soon') })).message).toMatch(
      /^compaction gap must be .*, given: 'soon'$/,
    );
    expect(thrown(() => compaction({ every: '1d', timeZone: 'Nowhere' })).message).toMatch(
      /^compaction timeZone must be an IANA time zone/,
    );
  });

  it('should reject tumbling options on count and gap steps', () => {
    const options = { gap: '1m', timeZone: 'UTC' } as unknown as CompactionOptions;
    expect(thrown(() => compaction(options)).message).toBe(
      "compaction timeZone applies only with every (tumbling steps), given: 'UTC'",
    );
  });
});
