import { Bench } from 'tinybench';
import { decodeMessage } from '../src/codecs/amqp-message.js';
import { createMessageScan, scanMessage } from '../src/codecs/message-scan.js';
import { decodeResult } from '../src/result-format/result-decoder.js';
import { encodeResult } from '../src/result-format/result-encoder.js';
import type { StepResult } from '../src/result-format/step-result.js';
import { buildChunks, corpusShape, CHUNK_MESSAGES } from './corpus.js';
import type { Spread } from './measure.js';
import { ratioRange, type CaseResult } from './report.js';
import { deliverFrame, stockDecoder } from './stock-decoder.js';

export const RESULT_SECTIONS = [1, 10, 1_000] as const;
const METADATA = { source: 'sensors', producer: 'sensors-per-minute', window: 'tumbling(1m)' };

/** A step result as a 1-minute, per-sensor sum job produces it, with `sections` keys. */
export function stepResult(sections: number): StepResult<number> {
  return {
    firstOffset: 1_000_000n,
    lastOffset: 1_062_499n,
    messages: 62_500,
    window: { start: Date.UTC(2025, 0, 1), end: Date.UTC(2025, 0, 1, 0, 1) },
    outputs: Array.from({ length: sections }, (_, i) => ({
      key: `sensor-${i}`,
      count: 62 + (i % 7),
      value: 3_100.5 + i,
    })),
    late: [],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [],
  };
}

/**
 * Case 2: the result format (encodeResult / decodeResult, one data section per key) at 1, 10
 * and 1,000 sections; and decoding a source message (one JSON data section and a creation
 * time) three ways over the same 500-message chunk: the full decoder (decodeMessage), the
 * hot path's scanner, and the stock client's decoder fed the same chunk as a Deliver frame —
 * the work the stock consumer does for every message it delivers. The stock client cannot
 * decode results (it keeps only the last data section), so those have no stock baseline.
 * tinybench: each operation is short, so it takes many samples and reports their median.
 */
export async function codecCases(timeMs: number): Promise<CaseResult[]> {
  const bench = new Bench({ time: timeMs, warmupTime: Math.min(timeMs, 200) });
  const encoded = new Map<number, Uint8Array>();
  for (const sections of RESULT_SECTIONS) {
    const result = stepResult(sections);
    const [message] = encodeResult(result, METADATA, 'sections');
    encoded.set(sections, message as Uint8Array);
    bench.add(`encode/${sections}`, () => encodeResult(result, METADATA, 'sections'));
    bench.add(`decode/${sections}`, () => decodeResult(message as Uint8Array));
  }

  const [chunk] = buildChunks(corpusShape(CHUNK_MESSAGES, 100));
  if (chunk === undefined) throw new Error('empty corpus');
  const bytes = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
  const frame = deliverFrame(chunk);
  const stock = stockDecoder();
  stock.decode(frame);
  const ours = decodeMessage(
    bytes.subarray(chunk.starts[chunk.count - 1], chunk.ends[chunk.count - 1]),
  );
  if (
    stock.delivered !== chunk.count ||
    ours.body?.type !== 'data' ||
    !Buffer.from(ours.body.sections[0] as Uint8Array).equals(stock.last?.content ?? Buffer.alloc(0))
  ) {
    throw new Error('codec bench: the stock decoder read other bodies than ours');
  }
  const scan = createMessageScan();
  bench.add('source/decodeMessage', () => {
    for (let i = 0; i < chunk.count; i++) {
      decodeMessage(bytes.subarray(chunk.starts[i], chunk.ends[i]));
    }
  });
  bench.add('source/scanMessage', () => {
    for (let i = 0; i < chunk.count; i++) {
      scanMessage(bytes, chunk.starts[i] as number, chunk.ends[i] as number, scan);
    }
  });
  bench.add('source/stock', () => stock.decode(frame));
  await bench.run();

  const latency = (name: string) => {
    const result = bench.getTask(name)?.result;
    if (result === undefined || !('latency' in result)) {
      throw new Error(`codec bench: task ${name} did not complete`);
    }
    return result.latency;
  };
  /** Calls per second: the median sample's, and the slowest and fastest sample's. */
  const rates = (name: string): Spread => {
    const { p50, min, max } = latency(name);
    // A sample under the timer's resolution reads 0 ms: no fastest rate then.
    return { median: 1000 / p50, min: 1000 / max, max: min > 0 ? 1000 / min : Number.NaN };
  };
  /**
   * Calls per second within one median absolute deviation of the median sample: tinybench's
   * samples are no rounds to pair, and their slowest and fastest are outliers (a collection).
   */
  const band = (name: string): Spread => {
    const { p50, mad } = latency(name);
    return {
      median: 1000 / p50,
      min: 1000 / (p50 + mad),
      max: p50 > mad ? 1000 / (p50 - mad) : Number.NaN,
    };
  };
  /** `name`'s rate over `baseline`'s, its min–max from the bands: slowest over fastest, and back. */
  const ratioOfBands = (name: string, baseline: string): Spread => {
    const task = band(name);
    const base = band(baseline);
    return {
      median: task.median / base.median,
      min: task.min / base.max,
      max: task.max / base.min,
    };
  };
  const opsPerSec = (name: string): number => rates(name).median;
  const spread = (name: string, scale = 1): Pick<CaseResult, 'msgsPerSecMin' | 'msgsPerSecMax'> => {
    const { min, max } = rates(name);
    return Number.isFinite(max) ? { msgsPerSecMin: min * scale, msgsPerSecMax: max * scale } : {};
  };
  const results: CaseResult[] = [];
  for (const sections of RESULT_SECTIONS) {
    for (const op of ['encode', 'decode'] as const) {
      const perSec = opsPerSec(`${op}/${sections}`);
      results.push({
        name: `result-${op}/${sections}-sections`,
        kind: 'codec',
        msgsPerSec: perSec,
        ...spread(`${op}/${sections}`),
        ratios: {},
        values: { sectionsPerSec: perSec * sections, bytes: encoded.get(sections)?.length ?? 0 },
      });
    }
  }
  const stockPerSec = opsPerSec('source/stock') * chunk.count;
  for (const decoder of ['decodeMessage', 'scanMessage'] as const) {
    const stockClient = ratioOfBands(`source/${decoder}`, 'source/stock');
    results.push({
      name: `source-decode/${decoder}`,
      kind: 'codec',
      msgsPerSec: opsPerSec(`source/${decoder}`) * chunk.count,
      ...spread(`source/${decoder}`, chunk.count),
      ratios: { stockClient: stockClient.median },
      values: ratioRange('stockClient', stockClient),
    });
  }
  results.push({
    name: 'source-decode/stock-client',
    kind: 'codec',
    msgsPerSec: stockPerSec,
    ...spread('source/stock', chunk.count),
    ratios: {},
  });
  return results;
}
