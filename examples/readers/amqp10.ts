// Reading a stream-windows target over AMQP 1.0 with rhea (RabbitMQ 4 serves a stream at
// /queues/<stream>): every packing, each data section of a message apart.
import rhea from 'rhea';
import { inOrder, sectionsOf, type Apply, type Reader } from './result-message.js';

export async function readWithAmqp10(
  server: { host: string; port: number; username: string; password: string },
  stream: string,
  from: 'first' | bigint, // 'first', or the offset after the last message you applied
  apply: Apply,
): Promise<Reader> {
  const { deliver, done, end } = inOrder(apply);
  const connection = rhea
    .create_container()
    .connect({ ...server, hostname: 'vhost:/', reconnect: false });
  connection.on('error', () => undefined); // surfaced by the receiver's events below
  const receiver = connection.open_receiver({
    source: {
      address: `/queues/${stream}`,
      filter: {
        'rabbitmq:stream-offset-spec':
          from === 'first' ? 'first' : rhea.types.wrap_long(Number(from)),
      },
    },
    autoaccept: false,
    credit_window: 500,
  });
  receiver.on('message', ({ message, delivery }) => {
    deliver(
      () => {
        const { content } = message.body as { content: Buffer | Buffer[] };
        return {
          offset: BigInt(message.message_annotations?.['x-stream-offset'] as number),
          properties: message.application_properties ?? {},
          // Several data sections arrive as an array of buffers, one as a buffer.
          sections: sectionsOf(message.content_type, Array.isArray(content) ? content : [content]),
        };
      },
      () => delivery?.accept(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    receiver.once('receiver_open', () => resolve());
    receiver.once('receiver_error', ({ receiver: r }) => reject(new Error(String(r?.error))));
    connection.once('connection_error', ({ connection: c }) => reject(new Error(String(c.error))));
    connection.once('disconnected', ({ error }) => reject(error ?? new Error('disconnected')));
  });
  return {
    done,
    close: async () => {
      connection.close();
      end();
    },
  };
}
