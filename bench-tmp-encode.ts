import { encodeStep, encodeResult } from './src/result-format/result-format.js';
const n = Number(process.argv[2] ?? 100000);
const pack = (process.argv[3] ?? 'single') as 'single';
const outputs = Array.from({ length: n }, (_, i) => ({ key: `customer-${i}`, count: 3, value: i * 7 }));
const result = { firstOffset: 0n, lastOffset: BigInt(n), messages: n, window: { start: 0, end: 3600000 }, outputs, late: [], lateDropped: 0, filtered: 0, deadLetters: [] };
const meta = { source: 'usage', producer: 'hourly', window: 'tumbling(1h)' };
for (let round = 0; round < 3; round++) {
  const t0 = process.cpuUsage();
  const writes = encodeStep(result as never, meta, pack, 'msgpack', 1048551, 0n);
  const u = process.cpuUsage(t0);
  const t1 = process.cpuUsage();
  encodeResult(result as never, meta, pack);
  const u1 = process.cpuUsage(t1);
  console.log(`${n} outputs ${pack}: ${writes.length} writes, encodeStep ${((u.user + u.system) / 1000).toFixed(0)} ms CPU; one encodeResult ${((u1.user + u1.system) / 1000).toFixed(0)} ms`);
}
