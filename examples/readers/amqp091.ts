// Reading a stream-windows target over AMQP 0-9-1 with amqplib: every packing. A 'sections'
// message arrives as ONE body, its msgpack maps run together (content type
// application/msgpack-seq); each part of a 'batch' as a message of its own.
import { connect } from 'amqplib';
import { inOrder, sectionsOf, type Apply, type Reader } from './result-message.js';

export async function readWithAmqp091(
  server: { hostname: string; port: number; username: string; password: string },
  stream: string,
  from: 'first' | bigint, // 'first', or the resumeFrom stored with the last step you applied
  apply: Apply,
): Promise<Reader> {
  const connection = await connect(server);
  const channel = await connection.createChannel();
  await channel.prefetch(500); // a stream consumer needs a prefetch
  const { deliver, done, end, fail } = inOrder(apply);
  // Whatever closes the channel or the connection ends the reading: resume from your stored offset.
  channel.on('error', fail);
  connection.on('error', fail);
  await channel.consume(
    stream,
    (message) => {
      if (message === null) {
        fail(new Error('the broker cancelled the consumer'));
        return;
      }
      deliver(
        () => {
          const { 'x-stream-offset': offset, ...headers } = message.properties.headers ?? {};
          return {
            offset: BigInt(offset as number),
            properties: headers,
            sections: sectionsOf(message.properties.contentType as string | undefined, [
              message.content,
            ]),
          };
        },
        () => channel.ack(message),
      );
    },
    { arguments: { 'x-stream-offset': from === 'first' ? 'first' : Number(from) } },
  );
  return {
    done,
    close: async () => {
      await connection.close();
      end();
    },
  };
}
