// Reading a stream-windows target over AMQP 1.0 with rhea (RabbitMQ 4 serves a stream at
// /queues/<stream>): every packing, each data section of a message apart.
import rhea, { type EventContext, type Message } from 'rhea';
import { inOrder, sectionsOf, type Apply, type Reader } from './result-message.js';

export async function readWithAmqp10(
  server: { host: string; port: number; username: string; password: string },
  stream: string,
  from: 'first' | bigint, // 'first', or the resumeFrom stored with the last step you applied
  apply: Apply,
): Promise<Reader> {
  const { deliver, done, end, fail } = inOrder(apply);
  const connection = rhea
    .create_container()
    .connect({ ...server, hostname: 'vhost:/', reconnect: false });
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
  // rhea types its listeners' context loosely: these say what each event gives.
  receiver.on('message', ({ message, delivery }: EventContext & { message: Message }) => {
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
  // Whatever ends the link or the connection ends the reading: resume from your stored offset.
  const failed = (what: string, error: unknown) => fail(new Error(`${what}: ${String(error)}`));
  receiver.on('receiver_error', ({ receiver: link }: EventContext) =>
    failed('receiver', link?.error),
  );
  connection.on('connection_error', ({ connection: c }: EventContext) =>
    failed('connection', c.error),
  );
  connection.on('disconnected', ({ error }: EventContext) => failed('disconnected', error));
  await new Promise<void>((resolve, reject) => {
    receiver.once('receiver_open', () => resolve());
    done.catch(reject);
  });
  return {
    done,
    close: () => {
      connection.close();
      end();
      return Promise.resolve();
    },
  };
}
