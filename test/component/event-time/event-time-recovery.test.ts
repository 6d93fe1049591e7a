import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import {
  aggregate,
  jsonMessage,
  lastWriteId,
  readResults,
  RecoveryError,
  writeId,
  type Source,
  type Target,
} from '../../../src/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { results } from '../../support/jobs/memory-job.js';

interface Reading {
  readonly k: string;
  readonly t: number;
}

function brokerWith(readings: readonly Reading[], frameMax?: number): MemoryBroker {
  const broker = new MemoryBroker(frameMax === undefined ? {} : { frameMax });
  broker.createStream('source');
  broker.createStream('target');
  broker.append(
    'source',
    readings.map((r) => jsonMessage(r)),
  );
  return broker;
}

function tumblingJob(
  source: Source,
  target: Target,
  options: { allowDefinitionChange?: true } = {},
) {
  return aggregate<Reading>(source)
    .eventTime((r) => r.t)
    .key((r) => r.k)
    .tumbling(10, { grace: 5 })
    .reduce((a) => a)
    .to(target, options);
}

describe('an event-time job restarting from its last result', () => {
  it('re-reads from the first offset of the window still open, with the watermark in force there', async () => {
    // Offset 1 opens [10,20); offset 3 (t=15) closes [0,10) at offset 3; [10,20) stays open.
    const broker = brokerWith([
      { k: 'a', t: 1 },
      { k: 'a', t: 12 },
      { k: 'a', t: 3 },
      { k: 'a', t: 15 },
    ]);
    const job = () =>
      tumblingJob(broker.source('source'), broker.target('target', { producer: 'p' }));
    await job().run({ untilCaughtUp: true });
    const [first] = results(broker);
    expect(first?.lastOffset).toBe(3n);
    expect(first?.recovery).toEqual({ watermark: 15, offset: 1n, offsetWatermark: 1 });

    broker.append('source', [jsonMessage({ k: 'a', t: 19 }), jsonMessage({ k: 'a', t: 40 })]);
    const started: (bigint | 'first')[] = [];
    const runner = job();
    runner.on('started', ({ from }) => started.push(from));
    await runner.run({ untilCaughtUp: true });
    expect(started).toEqual([1n]);
    // [10,20) holds offsets 1, 3 and 4, read again from offset 1 and published once.
    expect(results(broker).map((r) => r.outputs.map((o) => [o.start, o.count]))).toEqual([
      [[0, 2]],
      [[10, 3]],
    ]);
  });

  it('stops with a RecoveryError, publishing nothing, when retention removed its last result', async () => {
    const broker = brokerWith([
      { k: 'a', t: 1 },
      { k: 'a', t: 30 },
      { k: 'a', t: 60 },
    ]);
    const job = () =>
      tumblingJob(broker.source('source'), broker.target('target', { producer: 'p' }));
    await job().run({ untilCaughtUp: true });
    expect(results(broker).map((r) => r.lastOffset)).toEqual([1n, 2n]);
    broker.truncate('target', 2n);
    broker.append('source', [jsonMessage({ k: 'a', t: 90 })]);
    const running = job().run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(RecoveryError);
    await expect(running).rejects.toThrow(
      `cannot restart producer 'p' from its result ${lastWriteId(2n)} on stream 'target': the target holds no result of it under that id (removed by retention, or the name was used by another job)`,
    );
    expect(broker.messages('target')).toHaveLength(0);
  });

  it('stops with a RecoveryError when its producer name last wrote a result without recovery state', async () => {
    const broker = brokerWith([{ k: 'a', t: 1 }]);
    const target = broker.target('target', { producer: 'p' });
    // A step-window job under the same producer name wrote the last result.
    await aggregate<Reading>(broker.source('source'))
      .count(1)
      .reduce((a) => a)
      .to(target)
      .run({ untilCaughtUp: true });
    broker.append('source', [jsonMessage({ k: 'a', t: 2 })]);
    // Taking the name over on purpose: its last result is still no state to restart from.
    const running = tumblingJob(broker.source('source'), target, {
      allowDefinitionChange: true,
    }).run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(RecoveryError);
    await expect(running).rejects.toThrow(
      `cannot restart producer 'p' from its result ${lastWriteId(0n)} on stream 'target': its result carries no recovery state (written by a job without event-time windows)`,
    );
    expect(broker.messages('target')).toHaveLength(1);
  });

  it('writes open per-key count windows over the write limit once, in slices across its writes, and restarts from them as an uninterrupted run goes on', async () => {
    // 400 keys each with one message open in count(2) windows, then one key's second message:
    // the step's recovery state lists 399 open windows, about 7.5 KB, over a 4 KB write. (The
    // job stopped there with OutputTooLargeError when every message carried the whole list.)
    const readings = Array.from({ length: 400 }, (_, i) => ({ k: `key-${i}`, t: i }));
    const later = [
      { k: 'key-1', t: 501 },
      { k: 'key-new', t: 502 },
      { k: 'key-398', t: 503 },
    ];
    const job = (on: MemoryBroker) =>
      aggregate<Reading>(on.source('source'))
        .eventTime((r) => r.t)
        .key((r) => r.k)
        .count(2, { perKey: true })
        .reduce((a) => a)
        .to(on.target('target', { producer: 'p' }));

    const whole = brokerWith([...readings, { k: 'key-0', t: 500 }, ...later], 4096);
    await job(whole).run({ untilCaughtUp: true });

    const broker = brokerWith([...readings, { k: 'key-0', t: 500 }], 4096);
    await job(broker).run({ untilCaughtUp: true });
    // One step (offset 400), in three writes: two slices, then the third with its output.
    const ids = broker.chunks('target').map((chunk) => chunk.writer?.publishingId);
    expect(ids).toEqual([writeId(400n, 0, 3), writeId(400n, 1, 3), lastWriteId(400n)]);
    const messages = results(broker);
    expect(messages.map((m) => m.openCountSlices?.count)).toEqual([3, 3, 3]);
    expect(messages.map((m) => m.openCountSlices?.slice?.index)).toEqual([0, 1, 2]);
    expect(messages.map((m) => m.recovery?.openCounts)).toEqual([undefined, undefined, undefined]);
    expect(broker.messages('target').every((m) => m.bytes.length <= 4096)).toBe(true);
    const read = [];
    for await (const { result } of readResults(broker.source('target'), { untilCaughtUp: true })) {
      read.push(result);
    }
    expect(read).toHaveLength(1);
    expect(read[0]?.outputs.map((o) => o.key)).toEqual(['key-0']);
    expect(read[0]?.openCountSlices).toBeUndefined();
    const open = read[0]?.recovery?.openCounts;
    expect(open).toHaveLength(399);
    expect(open?.[0]).toEqual(['key-1', 1n]);
    expect(open?.[398]).toEqual(['key-399', 399n]);

    // The restart reads the slices back: key-1 and key-398 close their windows with the
    // messages they had before it, exactly as the uninterrupted run did.
    broker.append(
      'source',
      later.map((r) => jsonMessage(r)),
    );
    await job(broker).run({ untilCaughtUp: true });
    expect(broker.messages('target').map((m) => m.bytes)).toEqual(
      whole.messages('target').map((m) => m.bytes),
    );
    expect(results(broker).flatMap((r) => r.outputs.map((o) => [o.key, o.count]))).toEqual([
      ['key-0', 2],
      ['key-1', 2],
      ['key-398', 2],
    ]);
  });

  it('stops with a RecoveryError naming the write of a slice of its open counts the target no longer holds', async () => {
    const readings = Array.from({ length: 400 }, (_, i) => ({ k: `key-${i}`, t: i }));
    const broker = brokerWith([...readings, { k: 'key-0', t: 500 }], 4096);
    const job = (target: Target) =>
      aggregate<Reading>(broker.source('source'))
        .eventTime((r) => r.t)
        .key((r) => r.k)
        .count(2, { perKey: true })
        .reduce((a) => a)
        .to(target);
    await job(broker.target('target', { producer: 'p' })).run({ untilCaughtUp: true });
    broker.append('source', [jsonMessage({ k: 'key-1', t: 501 })]);
    const stored = broker.target('target', { producer: 'p' });
    const gone = writeId(400n, 1, 3);
    const forgetful: Target = {
      ...forwarding(stored),
      readResult: (id, where) =>
        id === gone ? Promise.resolve(undefined) : stored.readResult(id, where),
    };
    const running = job(forgetful).run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(RecoveryError);
    await expect(running).rejects.toMatchObject({ publishingId: gone, producer: 'p' });
    await expect(running).rejects.toThrow(
      `cannot restart producer 'p' from its result ${gone} on stream 'target': its step's open count windows are written in 3 slices, and slice 1 is not in the target under that id`,
    );
    expect(broker.messages('target')).toHaveLength(3);
  });
});

describe('an event-time job refusing what it could not recover from', () => {
  it('refuses its own encode where it is configured: a restart reads its recovery state from the result format', () => {
    const broker = brokerWith([{ k: 'a', t: 1 }]);
    expect(() =>
      aggregate<Reading>(broker.source('source'))
        .eventTime((r) => r.t)
        .tumbling(10, { grace: 0 })
        .reduce((a) => a)
        .to(broker.target('target', { producer: 'p' }), {
          encode: (result) => Buffer.from(JSON.stringify(result.outputs.length)),
        }),
    ).toThrow(
      /encode cannot be used with tumbling\(10ms, grace=0ms\): a restart reads its recovery state from the result format's properties/,
    );
  });

  it("stops on a failing aggregate even under 'dead-letter': a re-read rebuilds published windows only in part, so the dead letter would not replay", async () => {
    const broker = brokerWith([
      { k: 'a', t: 1 },
      { k: 'a', t: 2 },
    ]);
    const running = aggregate<Reading>(broker.source('source'))
      .eventTime((r) => r.t)
      .key((r) => r.k)
      .onError('dead-letter')
      .session(5, { grace: 0 })
      .aggregate({
        init: () => 0,
        add: (n: number) => {
          if (n >= 1) throw new RangeError('full');
          return n + 1;
        },
        result: (n) => n,
        merge: (a, b) => a + b,
      })
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    await expect(running).rejects.toThrow(
      /reduce failed for message at offset 1 of stream 'source'.*full/,
    );
    expect(broker.messages('target')).toHaveLength(0);
  });
});
