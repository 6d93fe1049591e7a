import { encodeMessage, type AmqpProperties } from './amqp-message.js';

/** The properties `sourceMessage` and `jsonMessage` set: the creation time (event time) and the content type. */
export interface SourceMessageOptions {
  /** The message's creation-time property, which jobs use as event time by default. */
  readonly creationTime?: number | Date;
  /** The content-type property, e.g. 'application/json'. */
  readonly contentType?: string;
}

/**
 * Encodes a body as a producer writes it to a source stream: an AMQP 1.0 message with one
 * data section. For feeding the embedded broker in tests and demos, or publishing raw bytes.
 */
export function sourceMessage(
  body: Uint8Array | string,
  options: SourceMessageOptions = {},
): Uint8Array {
  const { creationTime, contentType } = options;
  const properties: AmqpProperties = {};
  if (creationTime !== undefined) {
    properties.creationTime = creationTime instanceof Date ? creationTime.getTime() : creationTime;
  }
  if (contentType !== undefined) properties.contentType = contentType;
  const section = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return encodeMessage({
    properties: creationTime === undefined && contentType === undefined ? undefined : properties,
    body: { type: 'data', sections: [section] },
  });
}

/** A source message whose body is `value` as JSON (the default decoding of a job). */
export function jsonMessage(value: unknown, options: SourceMessageOptions = {}): Uint8Array {
  return sourceMessage(JSON.stringify(value), { contentType: 'application/json', ...options });
}
