import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import type { PublishConfirmResponse } from 'rabbitmq-stream-js-client/dist/responses/publish_confirm_response.js';
import type { PublishErrorResponse } from 'rabbitmq-stream-js-client/dist/responses/publish_error_response.js';
import type { MetadataUpdateResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_update_response.js';
import { parsePublishErrors } from './publish-errors.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): confirms are per connection, not per publisher.
 * Every `publisher.on('publish_confirm', …)` listener hears the confirms of every publisher
 * on the same connection (with no publisher id in its arguments), and connection listeners
 * can never be removed.
 *
 * WORKAROUND: one router per connection listens once and dispatches by the publisher id in
 * the frame to whoever registered that id; stream metadata changes (stream deleted, leader
 * moved: the broker drops the stream's publishers) go to the publishers of that stream.
 * test/integration/rabbitmq-target.test.ts shows two stock publishers on one connection
 * each hearing the other's confirms; when they hear only their own, this can go.
 */

export interface PublisherEvents {
  readonly stream: string;
  confirmed(publishingIds: readonly bigint[]): void;
  failed(publishingId: bigint, code: number): void;
  /** The broker no longer knows this publisher (its stream changed); `code` says why. */
  streamChanged(code: number): void;
}

export class PublishRouter {
  private readonly publishers = new Map<number, PublisherEvents>();

  constructor(connection: Connection) {
    connection.on('publish_confirm', (event: PublishConfirmResponse) =>
      this.publishers.get(event.publisherId)?.confirmed(event.publishingIds),
    );
    connection.on('publish_error', (event: PublishErrorResponse) => {
      const { publisherId, errors } = parsePublishErrors(event);
      const publisher = this.publishers.get(publisherId);
      for (const error of errors) publisher?.failed(error.publishingId, error.code);
    });
    connection.on('metadata_update', (event: MetadataUpdateResponse) => {
      for (const publisher of this.publishers.values()) {
        if (publisher.stream === event.metadataInfo.stream) {
          publisher.streamChanged(event.metadataInfo.code);
        }
      }
    });
  }

  register(publisherId: number, events: PublisherEvents): void {
    this.publishers.set(publisherId, events);
  }

  unregister(publisherId: number): void {
    this.publishers.delete(publisherId);
  }
}
