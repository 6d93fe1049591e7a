// Chunks of JSON readings as a broker delivers them, and processors built as a job builds
// them, for unit tests that drive the engine without a runner or a broker.
import { encodeMessage } from '../../../src/codecs/amqp-message.js';
import { packChunk } from '../../../src/ports/pack-chunk.js';
import type { SourceChunk } from '../../../src/ports/ports.js';
import { bodyDecoder } from '../../../src/api/value-decoder.js';
import type { Aggregator } from '../../../src/common/aggregator.js';
import type { ErrorPolicy } from '../../../src/api/policies.js';
import type { WindowSpec } from '../../../src/windows/window-spec.js';
import type { EventTimeWindowSpec } from '../../../src/windows/event-time-spec.js';
import { createProcessor, processorConfig } from '../../../src/engine/processor-factory.js';
import type { Processor } from '../../../src/engine/processor.js';
import type { StepFlushing } from '../../../src/engine/step-processor.js';

export interface Reading {
  readonly sensor: string;
  readonly value: number;
  /** Event time, epoch milliseconds. */
  readonly at: number;
}

/** One chunk of `readings` starting at `firstOffset`, one JSON data section per message. */
export function chunkOf(firstOffset: bigint, readings: readonly Reading[]): SourceChunk {
  const messages = readings.map((reading) =>
    encodeMessage({
      properties: { contentType: 'application/json' },
      body: { type: 'data', sections: [Buffer.from(JSON.stringify(reading), 'utf8')] },
    }),
  );
  return packChunk(firstOffset, 0, messages);
}

export const sumOfValues: Aggregator<Reading, number, number> = {
  init: () => 0,
  add: (sum, reading) => sum + reading.value,
  result: (sum) => sum,
  merge: (a, b) => a + b,
};

/** The processor a job `window(...).key(sensor).aggregate(aggregator)` runs, by the factory. */
export function processorFor(
  window: WindowSpec | EventTimeWindowSpec,
  options: {
    readonly aggregator?: Aggregator<Reading, number, number>;
    readonly onError?: ErrorPolicy;
    readonly flushing?: StepFlushing;
    /** A job over several inputs: their streams. */
    readonly inputs?: readonly string[];
  } = {},
): Processor<number> {
  const config = processorConfig<Reading, number, number>(
    {
      stream: 'readings',
      decode: bodyDecoder('json'),
      stages: [],
      eventTime: (reading) => reading.at,
      key: (reading) => reading.sensor,
      aggregator: options.aggregator ?? sumOfValues,
      onError: options.onError ?? 'stop',
      maxDeadLetters: 10,
    },
    window,
    { late: undefined, maxOutOfOrderness: undefined, early: undefined },
    options.inputs === undefined ? undefined : { inputs: options.inputs },
  );
  return createProcessor(config, options.flushing ?? { flushes: false, resultFormat: true });
}
