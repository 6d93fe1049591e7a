// Writes a job's results to RabbitMQ in chosen chunks: several writes in ONE Publish frame
// land in one chunk, as pipelined publishes of a running job often do.
import { randomUUID } from 'node:crypto';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import type { ClientParams } from 'rabbitmq-stream-js-client';
import { encodeSubEntryBatch } from '../../../src/codecs/sub-entry.js';
import { silentLogger } from '../../../src/common/logger.js';

/** One write of a job: its publishing id and messages (several: one sub-entry batch). */
export interface Write {
  readonly publishingId: bigint;
  readonly messages: readonly Uint8Array[];
}

/**
 * Publishes each group of `writes` as one Publish frame, waiting for its confirms before the
 * next, so each group is one chunk of its own (check it with `chunkLayout`).
 */
export async function publishInFrames(
  params: ClientParams,
  stream: string,
  groups: readonly (readonly Write[])[],
): Promise<void> {
  let confirmed: (() => void) | undefined;
  let pending = 0;
  const connection = await Connection.connect(
    {
      ...params,
      connectionId: `frames-${randomUUID()}`,
      listeners: {
        publish_confirm: (confirm) => {
          pending -= confirm.publishingIds.length;
          if (pending === 0) confirmed?.();
        },
      },
    },
    silentLogger,
  );
  try {
    await connection.sendAndWait(new DeclarePublisherRequest({ stream, publisherId: 0 }));
    for (const group of groups) {
      const entries = group.map(entryOf);
      const content = Buffer.concat([Buffer.from([0]), uint32(group.length), ...entries]);
      const frame = Buffer.concat([uint32(content.length + 4), Buffer.from([0, 2, 0, 1]), content]);
      const done = new Promise<void>((resolve) => (confirmed = resolve));
      pending = group.length;
      await connection.send({ key: 2, version: 1, responseKey: -1, toBuffer: () => frame });
      await done;
    }
  } finally {
    await connection.close({ closingCode: 0, closingReason: '', manuallyClose: true });
  }
}

function entryOf({ publishingId, messages }: Write): Buffer {
  const id = Buffer.alloc(8);
  id.writeBigUInt64BE(publishingId);
  const [single] = messages;
  if (messages.length === 1 && single !== undefined) {
    return Buffer.concat([id, uint32(single.length), single]);
  }
  return Buffer.concat([id, encodeSubEntryBatch(messages)]);
}

function uint32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
}
