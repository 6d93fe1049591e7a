import type { ClientParams } from 'rabbitmq-stream-js-client';
import { BufferDataWriter as RequestWriter } from 'rabbitmq-stream-js-client/dist/requests/abstract_request.js';
import { BufferDataWriter } from 'rabbitmq-stream-js-client/dist/requests/buffer_data_writer.js';
import type { DataWriter } from 'rabbitmq-stream-js-client/dist/requests/data_writer.js';
import { SaslAuthenticateRequest } from 'rabbitmq-stream-js-client/dist/requests/sasl_authenticate_request.js';
import { ClientInternalsError } from '../../common/errors.js';
import { checkProtocolString } from '../../common/stream-protocol.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): strings are written with their length in UTF-16 code
 * units (`string.length`) but their bytes in UTF-8 (`BufferDataWriter.writeString`, and the
 * SASL PLAIN response's size). Any non-ASCII character (a stream `größe`, a producer
 * `rollup-é`, a consumer group, a super stream, a binding key, a password) breaks the frame:
 * the broker closes the connection, and the client, which cannot decode the Close frame,
 * throws `Unknown response 22` from its socket listener, an uncaught exception. A string over
 * 32,767 code units throws a RangeError while the request is encoded, which we would take
 * for a failed write and drop the connection over.
 *
 * WORKAROUND: the client's two copies of BufferDataWriter (the one requests are encoded with,
 * and the one its responses re-encode themselves with) write a string's UTF-8 byte count, and refuse one over the protocol's 32,767 bytes with a
 * ConfigError (../../common/stream-protocol.ts) before any byte of the request is written;
 * SASL PLAIN counts the bytes of user and password. RabbitMQ 4.0.5 takes such names (a
 * stream, producer and consumer `größe` publish and read back). The prototypes are patched
 * once, for every connection of the process, the stock client's own included (it only gains
 * correct frames). test/integration/rabbitmq-names.test.ts shows the stock client killing a
 * child process on a non-ASCII producer name; when that child publishes, this file can go.
 */

let installed = false;

/** Makes every string the client writes UTF-8 length-correct; idempotent. */
export function writeStringsAsUtf8(): void {
  if (installed) return;
  for (const writer of [RequestWriter, BufferDataWriter]) {
    checkMethod(writer.prototype, 'writeString');
    writer.prototype.writeString = writeUtf8String;
  }
  checkMethod(SaslAuthenticateRequest.prototype, 'writeContent');
  const stockSasl = Object.getOwnPropertyDescriptor(
    SaslAuthenticateRequest.prototype,
    'writeContent',
  )?.value as (this: SaslAuthenticateRequest, writer: DataWriter) => void;
  Object.defineProperty(SaslAuthenticateRequest.prototype, 'writeContent', {
    value: function (this: SaslAuthenticateRequest, writer: DataWriter) {
      const params = (this as unknown as { params: SaslParams }).params;
      if (params.mechanism !== 'PLAIN') {
        stockSasl.call(this, writer);
        return;
      }
      writePlainResponse(writer, params);
    },
    writable: true,
    configurable: true,
  });
  installed = true;
}

/**
 * Refuses a virtual host or connection name too long for the protocol before connecting: the
 * client writes the handshake from its socket's async 'connect' listener, where the writer's
 * ConfigError would be an unhandled rejection (which ends the process).
 */
export function checkHandshakeStrings(params: ClientParams): void {
  checkProtocolString('vhost', params.vhost);
  if (params.connectionName !== undefined) {
    checkProtocolString('connectionName', params.connectionName);
  }
}

interface SaslParams {
  readonly mechanism: string;
  readonly username: string;
  readonly password: string;
}

function writeUtf8String(this: DataWriter, value: string): void {
  checkProtocolString('a stream-protocol string', value);
  const bytes = Buffer.from(value, 'utf8');
  this.writeInt16(bytes.length);
  this.writeData(bytes);
}

/** SASL PLAIN (RFC 4616): mechanism, then uint32 size and `\0 user \0 password`, in UTF-8. */
function writePlainResponse(writer: DataWriter, params: SaslParams): void {
  const user = Buffer.from(params.username, 'utf8');
  const password = Buffer.from(params.password, 'utf8');
  writer.writeString(params.mechanism);
  writer.writeUInt32(user.length + password.length + 2);
  writer.writeUInt8(0);
  writer.writeData(user);
  writer.writeUInt8(0);
  writer.writeData(password);
}

function checkMethod(prototype: object, method: string): void {
  if (typeof (prototype as Record<string, unknown>)[method] !== 'function') {
    throw new ClientInternalsError(
      `rabbitmq-stream-js-client internals changed (no ${method} where it used to be): ` +
        'src/rabbitmq/gaps/utf8-strings.ts needs updating for this client version',
    );
  }
}
