import { fold, latest } from '../../src/common/aggregator.js';
import type { SourceChunk } from '../../src/ports/ports.js';
import { StepProcessor, type StepProcessorConfig } from '../../src/engine/step-processor.js';
import type { StepResult } from '../../src/result-format/step-result.js';
import { bodyDecoder } from '../../src/api/value-decoder.js';
import { compaction } from '../../src/windows/compaction.js';
import { count } from '../../src/windows/count.js';
import { session } from '../../src/windows/session.js';
import { tumbling } from '../../src/windows/tumbling.js';
import type { CorpusShape, Reading } from '../corpus.js';
import { countOf, SESSION_GAP_MS, type WindowDigest, type WindowKind } from './window-kinds.js';

const sum = fold((total: number, reading: Reading) => total + reading.value, 0);

/**
 * What every bench processor's config has, as src/dsl/pipeline.ts fills it for these jobs:
 * stream 'bench', JSON bodies keyed by sensor, no stages, the defaults for late messages and
 * errors. A fresh object (its own decoder and key function) per call, as a job builds.
 */
export function processorBase() {
  return {
    stream: 'bench',
    decode: bodyDecoder<Reading>('json'),
    eventTime: undefined,
    key: (reading: Reading): string => reading.sensor,
    late: 'side',
    onError: 'stop',
    maxDeadLetters: 1_000,
    stages: [],
  } as const;
}

/**
 * The processor config `aggregate(source).<kind>.key(r => r.sensor).reduce(sum, 0)` builds
 * (or `.compact(r => r.sensor, { count })`), assembled from the same parts as
 * src/dsl/pipeline.ts so that the bench measures StepProcessor alone, without a broker.
 */
export function engineConfig(
  kind: WindowKind,
  shape: CorpusShape,
): StepProcessorConfig<Reading, unknown, number | Reading> {
  const base = processorBase();
  switch (kind) {
    case 'tumbling-1m':
      return { ...base, window: tumbling('1m'), aggregator: sum };
    case 'count':
      return { ...base, window: count(countOf(shape)), aggregator: sum };
    case 'session':
      return { ...base, window: session(SESSION_GAP_MS), aggregator: sum };
    case 'compaction':
      return {
        ...base,
        window: compaction({ count: countOf(shape) }),
        aggregator: latest<Reading>(),
      };
  }
}

/** Runs the chunks through a fresh StepProcessor, taking each chunk's results as the runner does. */
export function runEngine(
  config: StepProcessorConfig<Reading, unknown, number | Reading>,
  chunks: readonly SourceChunk[],
): WindowDigest[] {
  const processor = new StepProcessor(config);
  const digests: WindowDigest[] = [];
  for (const chunk of chunks) {
    processor.process(chunk);
    for (const result of processor.ready) digests.push(digestOf(result));
    processor.ready.length = 0;
  }
  return digests;
}

function digestOf(result: StepResult<number | Reading>): WindowDigest {
  let total = 0;
  for (const output of result.outputs) {
    total += typeof output.value === 'number' ? output.value : output.value.value;
  }
  return { keys: result.outputs.length, messages: result.messages, total };
}
