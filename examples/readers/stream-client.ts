// Reading a stream-windows target with the stock RabbitMQ stream client
// (rabbitmq-stream-js-client): pack 'single' only. This client keeps only the last data
// section of a message ('sections') and loses sub-entry batches ('batch'), so both are refused.
import { decode } from '@msgpack/msgpack';
import { connect, Offset, type ClientParams } from 'rabbitmq-stream-js-client';
import { inOrder, sectionsOf, type Apply, type Reader } from './result-message.js';

export async function readWithStreamClient(
  params: ClientParams,
  stream: string,
  from: 'first' | bigint, // 'first', or the resumeFrom stored with the last step you applied
  apply: Apply,
): Promise<Reader> {
  const client = await connect(params);
  const { deliver, done, end } = inOrder(apply);
  type Message = Parameters<Parameters<typeof client.declareConsumer>[1]>[0];
  const read = (message: Message) => {
    const properties = message.applicationProperties ?? {};
    const contentType = message.messageProperties?.contentType;
    // A 'single' msgpack message holds an array of sections, also as a part of a step of
    // several writes; a 'batch' part holds one map.
    const batchPart =
      contentType === 'application/msgpack' &&
      properties['sw-part'] !== undefined &&
      !Array.isArray(decode(message.content, { useBigInt64: true }));
    if (contentType === 'application/msgpack-seq' || batchPart) {
      throw new Error(
        `offset ${message.offset}: use AMQP 1.0 or 0-9-1 for pack 'sections' and 'batch'`,
      );
    }
    return {
      offset: message.offset as bigint,
      properties,
      sections: sectionsOf(contentType, [message.content]),
    };
  };
  const consumer = await client.declareConsumer(
    { stream, offset: from === 'first' ? Offset.first() : Offset.offset(from) },
    (message) => deliver(() => read(message)),
  );
  return {
    done,
    close: async () => {
      await consumer.close();
      await client.close();
      end();
    },
  };
}
