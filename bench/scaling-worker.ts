/**
 * The job module of the `scaling` case's embedded-broker task (bench/scaling.ts): every worker
 * thread builds its own embedded broker holding the super stream, fills only the partitions it
 * owns (the others stay empty), and builds the partitioned bench job on it. Filling is part
 * of building, which ends in every thread before any loop starts (the producer check): the
 * case times from the first loop's start.
 */
import type { PartitionWorker, PartitionWorkerJob } from '../src/partitioning/partition-workers.js';
import { MemoryBroker } from '../src/memory/broker.js';
import { CHUNK_MESSAGES, encodeReading, readings } from './corpus.js';
import { partitionsJob } from './partitions-job.js';

export interface ScalingWorkerConfig {
  readonly partitions: number;
  /** Messages in each partition. */
  readonly messagesPerPartition: number;
}

const KEYS = 100;
const START = Date.UTC(2025, 0, 1);

export default function build({ index, workers, config }: PartitionWorker): PartitionWorkerJob {
  const { partitions, messagesPerPartition } = config as ScalingWorkerConfig;
  const broker = new MemoryBroker();
  const streams = broker.createSuperStream('source', { partitions });
  broker.createStream('results');
  streams.forEach((stream, partition) => {
    if (partition % workers === index) fill(broker, stream, messagesPerPartition);
  });
  const job = partitionsJob(broker.superStreamSource('source'), (partition) =>
    broker.target('results', { producer: partition.producer }),
  );
  return { job, close: () => undefined };
}

/** The e2e corpus (1 ms of event time per message, 100 keys), 500 messages per chunk. */
function fill(broker: MemoryBroker, stream: string, messages: number): void {
  let chunk: Uint8Array[] = [];
  let index = 0;
  for (const reading of readings({ messages, keys: KEYS, windowMessages: messages })) {
    chunk.push(encodeReading(reading, START + index++));
    if (chunk.length === CHUNK_MESSAGES || index === messages) {
      broker.append(stream, chunk);
      chunk = [];
    }
  }
}
