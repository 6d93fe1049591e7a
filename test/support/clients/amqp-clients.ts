// The AMQP 1.0 client rhea and the AMQP 0-9-1 client amqplib, as another service would use
// them to read a stream from its first offset, for tests of what they receive of a target.
import { createRequire } from 'node:module';
import { connect as connectAmqp091 } from 'amqplib';
import { asPromise } from '../../../src/common/as-promise.js';
import { parseStreamUrl } from '../../../src/rabbitmq/connection-url.js';
import { bound } from '../timing.js';

/** What a client received of one message, in the terms both protocols share. */
export interface AmqpDelivery {
  /** The stream offset: annotation (1.0) or header (0-9-1) x-stream-offset. */
  readonly offset: number;
  /** The body's data sections as rhea returns them, or the one 0-9-1 body. */
  readonly body: readonly Buffer[];
  readonly contentType: string | undefined;
  /** Application properties (1.0), or the headers without x-stream-offset (0-9-1). */
  readonly properties: Readonly<Record<string, unknown>>;
}

/** How long a read waits for the expected messages, and then for any more. */
const DEADLINE_MS = bound(60_000);
const QUIET_MS = 1_000;

/**
 * The broker's AMQP port (0-9-1 and 1.0 share it): scripts/rabbitmq.sh's RABBITMQ_AMQP_PORT,
 * 5673 unless set, on the host of the stream URL.
 */
export function amqpEndpoint(streamUrl: string): { host: string; port: number } {
  const { hostname } = parseStreamUrl(streamUrl);
  return { host: hostname, port: Number(process.env.RABBITMQ_AMQP_PORT ?? 5673) };
}

/**
 * Collects deliveries until `count` arrived and QUIET_MS passed without another (so extra
 * messages show up), or fails at DEADLINE_MS with what arrived, or on the client's error.
 * `start` subscribes and returns how to close the client, which runs however it ends.
 */
function collect(
  count: number,
  start: (
    push: (delivery: AmqpDelivery) => void,
    fail: (error: unknown) => void,
  ) => Promise<() => Promise<void>>,
) {
  return new Promise<AmqpDelivery[]>((resolve, reject) => {
    const received: AmqpDelivery[] = [];
    let quiet: NodeJS.Timeout | undefined;
    let ended = false;
    const end = (error?: unknown) => {
      if (ended) return;
      ended = true;
      clearTimeout(quiet);
      clearTimeout(deadline);
      void close
        .then((stop) => stop())
        .catch(() => undefined)
        .finally(() => (error === undefined ? resolve(received) : reject(asError(error))));
    };
    const deadline = setTimeout(
      () => end(`expected ${count} messages in ${DEADLINE_MS} ms, got ${received.length}`),
      DEADLINE_MS,
    );
    const close = start((delivery) => {
      received.push(delivery);
      if (received.length >= count) {
        clearTimeout(quiet);
        quiet = setTimeout(() => end(), QUIET_MS);
      }
    }, end);
    close.catch(end);
  });
}

const asError = (error: unknown): Error =>
  error instanceof Error ? error : new Error(String(error));

interface RheaMessage {
  message_annotations?: Record<string, unknown>;
  application_properties?: Record<string, unknown>;
  content_type?: string;
  // Data sections: one Buffer, or an array of them when there are several.
  body: { content: Buffer | Buffer[] };
}
interface RheaConnection {
  open_receiver(options: unknown): { on(event: string, handler: (context: never) => void): void };
  on(event: string, handler: (context: never) => void): void;
  close(): void;
}
const rhea = createRequire(import.meta.url)('rhea') as {
  create_container(): {
    connect(options: unknown): RheaConnection;
    on(event: 'error', handler: (error: unknown) => void): void;
  };
};

/** AMQP 1.0 (rhea): a receiver on `/queues/<stream>` with the offset filter `first`. */
export function readWithRhea(streamUrl: string, stream: string, count: number) {
  const { host, port } = amqpEndpoint(streamUrl);
  const { username, password } = parseStreamUrl(streamUrl);
  return collect(count, (push, fail) =>
    asPromise(() => {
      const container = rhea.create_container();
      // Any error rhea has no handler for (a session or link refused, a lost connection).
      container.on('error', fail);
      const connection = container.connect({
        host,
        port,
        username,
        password,
        hostname: 'vhost:/',
        reconnect: false,
      });
      const receiver = connection.open_receiver({
        source: {
          address: `/queues/${stream}`,
          filter: { 'rabbitmq:stream-offset-spec': 'first' },
        },
        credit_window: 500,
      });
      receiver.on('message', ({ message }: { message: RheaMessage }) => {
        const { content } = message.body;
        push({
          offset: Number(message.message_annotations?.['x-stream-offset']),
          body: Array.isArray(content) ? content : [content],
          contentType: message.content_type,
          properties: message.application_properties ?? {},
        });
      });
      return () => {
        connection.close();
        return Promise.resolve();
      };
    }),
  );
}

/** AMQP 0-9-1 (amqplib): prefetch 500, `x-stream-offset: first`, manual acks. */
export function readWithAmqplib(streamUrl: string, stream: string, count: number) {
  const { host, port } = amqpEndpoint(streamUrl);
  const { username, password } = parseStreamUrl(streamUrl);
  return collect(count, async (push, fail) => {
    const connection = await connectAmqp091({ hostname: host, port, username, password });
    connection.on('error', fail);
    const channel = await connection.createChannel();
    channel.on('error', fail);
    await channel.prefetch(500);
    await channel.consume(
      stream,
      (message) => {
        if (message === null) return;
        const { 'x-stream-offset': offset, ...headers } = (message.properties.headers ??
          {}) as Record<string, unknown>;
        push({
          offset: Number(offset),
          body: [message.content],
          contentType: message.properties.contentType as string | undefined,
          properties: headers,
        });
        channel.ack(message);
      },
      { arguments: { 'x-stream-offset': 'first' } },
    );
    return () => connection.close();
  });
}
