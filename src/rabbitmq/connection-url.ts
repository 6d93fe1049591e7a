import type { ClientParams } from 'rabbitmq-stream-js-client';
import { ConfigError } from '../common/errors.js';
import type { NodeAddress } from './cluster/stream-members.js';

/**
 * Reads a stream URL, `rabbitmq-stream://user:password@host:port/vhost` (what
 * scripts/rabbitmq.sh prints and RABBITMQ_STREAM_URL holds), into the client's connection
 * settings. `rabbitmq-stream+tls://` turns TLS on. As in AMQP URIs, the path is the
 * percent-encoded virtual host, and an empty path means the default vhost `/`.
 */
export function parseStreamUrl(url: string, parameter = 'url'): ClientParams {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(parameter, 'must be a rabbitmq-stream:// URL', url);
  }
  const tls = parsed.protocol === 'rabbitmq-stream+tls:';
  if (parsed.protocol !== 'rabbitmq-stream:' && !tls) {
    throw new ConfigError(
      parameter,
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

/**
 * Reads the URLs of several nodes of one cluster (as the Java client's `uris`): the first one's
 * settings, and every URL's node, in order, to try in turn. They must agree on everything but
 * host and port: one job signs in to every node of its cluster the same way.
 */
export function parseStreamUrls(urls: readonly string[]): {
  params: ClientParams;
  nodes: NodeAddress[];
} {
  if (!Array.isArray(urls) || urls.length === 0) {
    throw new ConfigError('urls', 'must name at least one node', urls);
  }
  const all = urls.map((url, i) => {
    if (typeof url !== 'string') throw new ConfigError(`urls[${i}]`, 'must be a string', url);
    return parseStreamUrl(url, `urls[${i}]`);
  });
  const params = all[0] as ClientParams;
  const signIn = ({ username, password, vhost, ssl }: ClientParams): string =>
    JSON.stringify([username, password, vhost, ssl === true]);
  all.forEach((other, i) => {
    if (signIn(other) !== signIn(params)) {
      throw new ConfigError(
        `urls[${i}]`,
        "must have urls[0]'s user, password, virtual host and scheme (one cluster)",
        `${other.hostname}:${other.port}`,
      );
    }
  });
  return { params, nodes: all.map(({ hostname, port }) => ({ host: hostname, port })) };
}
