// 'stream-windows/rabbitmq': the RabbitMQ adapter, over rabbitmq-stream-js-client 1.0.0.
// This list is its public API; the frame-level workarounds under ./gaps stay internal.

// Connecting, managing streams, and the ports a job runs on.
export { connect, RabbitMQ, type ConnectOptions, type StreamOptions } from './connection.js';
export { StreamCommandError } from './stream-command-error.js';
export { parseStreamUrl } from './connection-url.js';
export { RabbitTarget, type TargetOptions } from './write/target.js';
// Writing a job's input: `rabbit.producer(stream, { name })`, and the messages jobs read.
export {
  StreamProducer,
  type ProducerOptions,
  type SendOptions,
} from '../producer/stream-producer.js';
export { jsonMessage, sourceMessage, type SourceMessageOptions } from '../codecs/source-message.js';
export {
  rabbitSource,
  type RabbitSource,
  type RabbitSourceOptions,
  type SourceReconnectOptions,
} from './read/source.js';
export type { SingleActiveOptions } from './read/source-subscription.js';

// Super streams: `rabbit.createSuperStream(name, layout)`, `partitions`, `route`, and
// `rabbit.superStreamSource(name, options)`, one Source per partition (single active per
// partition under RabbitMQ's partition rule).
export type { SuperStreamLayout } from '../common/super-stream-layout.js';

// What reading can fail with (all SourceErrors: `retriable` tells the runner what to do).
export { SubscriptionLostError, SubscribeError } from './read/source-subscription.js';
export { MalformedChunkError } from './read/deliver-chunk.js';
