// An embedded broker as an outbox relay's broker (or `relayStatus`'s), its targets closeable
// as RabbitMQ's are, telling the test which targets were made and which are still open: a
// RabbitMQ connection serves 256 at most, so whatever makes them must close them.
import type { MemoryBroker } from '../../../src/memory/index.js';
import type { RelayBroker, RelayTarget } from '../../../src/outbox/outbox-relay.js';
import { forwarding } from './forwarding-target.js';

/** A relay broker over `broker`, and the streams of the targets it made and of those not closed. */
export interface ClosingRelayBroker extends RelayBroker {
  readonly made: string[];
  readonly open: () => string[];
}

export function closingRelayBroker(broker: MemoryBroker): ClosingRelayBroker {
  const made: string[] = [];
  const open = new Set<RelayTarget>();
  return {
    made,
    open: () => [...open].map((target) => target.stream),
    partitions: (superStream) => broker.partitions(superStream),
    target(stream, options) {
      const target: RelayTarget = {
        ...forwarding(broker.target(stream, options)),
        close: () => {
          open.delete(target);
          return Promise.resolve();
        },
      };
      made.push(stream);
      open.add(target);
      return target;
    },
  };
}
