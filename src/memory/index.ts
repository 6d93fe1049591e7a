/**
 * The embedded broker: in-process RabbitMQ streams for tests, demos and users' unit tests.
 * Everything a user or a test harness needs; the log, tail and fault bookkeeping stay inside.
 */

// The broker and its options.
export { MemoryBroker, type MemoryBrokerOptions, type ConsumerGroupView } from './broker.js';
// The ports it hands out: a job's source and target, and a user-level consumer.
export { MemorySource } from './source.js';
export { MemoryTarget } from './target.js';
export { MemoryConsumer } from './consumer.js';
// Writing a job's input as on RabbitMQ: `broker.producer(stream, { name })`.
export {
  StreamProducer,
  type ProducerOptions,
  type SendOptions,
} from '../producer/stream-producer.js';
// Super streams and single active consumer groups.
export type { SuperStreamLayout } from '../common/super-stream-layout.js';
export { SingleActiveMember, type SingleActiveMemberOptions } from './single-active-member.js';
// A job's source as a single active consumer: `broker.source(stream, { singleActive: { name } })`.
export { SingleActiveSource, type SingleActiveSourceOptions } from './single-active-source.js';
// A super stream as a partitioned job reads it: `broker.superStreamSource(name, { singleActive })`.
export { MemoryPartitionedSource } from './super-stream-source.js';
export type { OffsetSpec } from './offset-spec.js';
// What inspection and consumers return.
export type { StoredChunk, StoredMessage, ChunkWriter } from './stored-chunk.js';
// Fault injection.
export { Fault, type FaultSpec } from './faults.js';
export {
  SimulatedCrash,
  SingleActiveMemberLostError,
  StreamNotFoundError,
  type FaultPoint,
} from './errors.js';
