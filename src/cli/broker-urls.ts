import { parseStreamUrl, parseStreamUrls } from '../rabbitmq/connection-url.js';

/**
 * The brokers `--url` (or RABBITMQ_STREAM_URL) names: one URL, or the nodes of one cluster
 * separated by commas, which `connect()` tries in turn, so a command still works while one
 * node is down. Throws a ConfigError naming the malformed URL (`url`, or `urls[i]` in a list)
 * or the one that signs in differently: the command line's fault, not the broker's.
 */
export function brokerUrls(text: string): string[] {
  const urls = text.split(',').map((url) => url.trim());
  if (urls.length === 1) parseStreamUrl(text);
  else parseStreamUrls(urls);
  return urls;
}
