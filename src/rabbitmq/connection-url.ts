import type { ClientParams } from 'rabbitmq-stream-js-client';
import { ConfigError } from '../common/errors.js';

/**
 * Reads a stream URL, `rabbitmq-stream://user:password@host:port/vhost` (what
 * scripts/rabbitmq.sh prints and RABBITMQ_STREAM_URL holds), into the client's connection
 * settings. `rabbitmq-stream+tls://` turns TLS on. As in AMQP URIs, the path is the
 * percent-encoded virtual host, and an empty path means the default vhost `/`.
 */
export function parseStreamUrl(url: string): ClientParams {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('url', 'must be a rabbitmq-stream:// URL', url);
  }
  const tls = parsed.protocol === 'rabbitmq-stream+tls:';
  if (parsed.protocol !== 'rabbitmq-stream:' && !tls) {
    throw new ConfigError(
      'url',
      'must start with rabbitmq-stream:// or rabbitmq-stream+tls://',
      url,
    );
  }
  const path = parsed.pathname.replace(/^\//, '');
  return {
    hostname: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? (tls ? 5551 : 5552) : Number(parsed.port),
    username: decodeURIComponent(parsed.username || 'guest'),
    password: decodeURIComponent(parsed.password || 'guest'),
    vhost: path === '' ? '/' : decodeURIComponent(path),
    ...(tls ? { ssl: true } : {}),
  };
}
