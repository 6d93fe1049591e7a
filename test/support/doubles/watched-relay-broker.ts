// A RabbitMQ connection as an outbox relay's broker, telling the test each frame of rows the
// relay hands over, before it goes out: a test kills or cuts at that moment, between a
// publish and its confirm.
import type { RelayBroker } from '../../../src/outbox/outbox-relay.js';
import type { RabbitMQ } from '../../../src/rabbitmq/connection.js';
import { forwarding } from './forwarding-target.js';

/** `rabbit`'s targets, `onSend` called with the publishing id of the last row of each frame sent. */
export function watchedRelayBroker(
  rabbit: RabbitMQ,
  onSend: (lastPublishingId: bigint) => void,
): RelayBroker {
  return {
    target(stream, options) {
      const target = rabbit.target(stream, options);
      return {
        ...forwarding(target),
        publishEach(entries) {
          const last = entries.at(-1);
          if (last !== undefined) onSend(last.publishingId);
          return target.publishEach(entries);
        },
      };
    },
  };
}
