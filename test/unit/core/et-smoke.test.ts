import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import { aggregate, decodeResult, jsonMessage, tumbling, session, hopping, count } from '../../../src/index.js';

describe('smoke', () => {
  it('runs', async () => {
    const broker = new MemoryBroker({ now: () => 0 });
    broker.createStream('s'); broker.createStream('t');
    const times = [2, 4, 3, 12, 8, 14, 9, 16, 17, 7, 21, 13, 18, 35];
    broker.append('s', times.map((t, i) => jsonMessage({ k: i % 2 ? 'a' : 'b', t: t * 1000, v: 1 })));
    for (const window of [tumbling('10s', { grace: '5s' }), hopping('10s', '5s', { grace: '1s' }), session('3s', { grace: '1s' }), count(2, { perKey: true })]) {
      
      const b2 = new MemoryBroker({ now: () => 0 });
      b2.createStream('s'); b2.createStream('t');
      b2.append('s', times.map((t, i) => jsonMessage({ k: i % 2 ? 'a' : 'b', t: t * 1000, v: 1 })));
      let p = aggregate<{ k: string; t: number; v: number }>(b2.source('s')).eventTime((v) => v.t).key((v) => v.k).window(window);
      if (window.kind !== 'count') p = p.maxOutOfOrderness('2s');
      const job = () => p.reduce((a, b) => ({ ...a, v: a.v + b.v })).to(b2.target('t', { producer: 'p' }));
      await job().run({ untilCaughtUp: true });
      const results = b2.messages('t').map((m) => decodeResult(m.bytes));
      console.log(window.describe(), JSON.stringify(results.map((r) => ({ id: String(r.lastOffset), first: String(r.firstOffset), n: r.messages, late: r.lateCount, out: r.outputs.map((o) => [o.key, o.start, o.end, o.count]), rec: r.recovery && { ...r.recovery, offset: String(r.recovery.offset), openCounts: r.recovery.openCounts?.map(([k, o]) => [k, String(o)]) } }))));
      const before = b2.messages('t').length;
      await job().run({ untilCaughtUp: true });
      expect(b2.messages('t').length).toBe(before);
    }
  });
});
