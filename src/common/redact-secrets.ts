/** What a masked password shows instead. */
export const MASK = '***';

/**
 * `text` with the password of every connection URL and connection string in it masked as `***`,
 * the one rule for anything the library says (error messages, log lines, events, the CLI's
 * output) that may name a broker or a database:
 *
 * - a URL's userinfo keeps its user name and loses its password:
 *   `rabbitmq-stream://guest:***@host:5552/`. Malformed URLs too, which `new URL` refuses: the
 *   userinfo runs to the last `@` of the host part (`amqp://guest:gu@st@host`), or of the whole
 *   URL when the host part has none (a `/` written into the password), so a URL with a port
 *   and an `@` in its path is masked from the port to there (`http://h:***@x`). A URL ends at
 *   whitespace, `<`, `>` or a `,` that starts the next URL of a list.
 * - the value of a key ending in `password` (`password`, `sslpassword`, `PGPASSWORD`), `passwd`,
 *   `pwd` or `passphrase` (a TLS key's) given with `=` (libpq's `password=…` or `password='…'`,
 *   a URL's `?password=…`, an environment variable) or, quoted, with `:` (`"password":"…"` in
 *   JSON, `password: '…'` as Node prints an object).
 *
 * The user name stays, as psql, libpq and RabbitMQ's tools show it: it says which account
 * was refused, and a user name is no secret.
 */
export function redactSecrets(text: string): string {
  // An error may be made per message (dead letters): the patterns, ~5 µs each on a short
  // message, run only on text that may hold what they mask (a test is ~0.3 µs).
  let redacted = text;
  if (redacted.includes('://')) {
    redacted = redacted.replace(URL_LIKE, (url) => url.split(NEXT_URL).map(maskUserinfo).join(','));
  }
  if (NAMES_A_PASSWORD.test(redacted)) {
    redacted = redacted
      .replace(KEY_VALUE, (_, key: string) => `${key}${MASK}`)
      .replace(
        QUOTED_KEY_VALUE,
        (_, key: string, quote: string) => `${key}${quote}${MASK}${quote}`,
      );
  }
  return redacted;
}

/** Not within a longer word: each start is tried once, so the scan stays linear. */
const SCHEME = String.raw`(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*:\/\/`;
/**
 * A scheme and everything up to whitespace or an angle bracket. Quotes go on: a password may
 * hold one, and the `@` is looked for in the host part first (maskUserinfo).
 */
const URL_LIKE = new RegExp(`${SCHEME}[^\\s<>]*`, 'gi');
/** The comma before the next URL of a list (`--url a,b`). */
const NEXT_URL = new RegExp(`,(?=${SCHEME})`, 'i');
/** What every KEY holds. */
const NAMES_A_PASSWORD = /pass|pwd/i;
const KEY = String.raw`\b(?:[a-z_]*password|passwd|pwd|passphrase)\b`;
/** `key=value`, the value quoted or up to whitespace, `&`, `;` or `#`. */
const KEY_VALUE = new RegExp(
  String.raw`(${KEY}\s*=\s*)(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;#]*)`,
  'gi',
);
/** `"key": "value"` or `key: 'value'`. */
const QUOTED_KEY_VALUE = new RegExp(
  String.raw`(${KEY}["']?\s*:\s*)(["'])(?:\\.|(?!\2)[^\\])*\2`,
  'gi',
);

/** One URL (`scheme://rest`) with the password of its userinfo masked. */
function maskUserinfo(url: string): string {
  const start = url.indexOf('://') + 3;
  const rest = url.slice(start);
  const hostEnd = rest.search(/[/?#]/);
  const hostPart = hostEnd === -1 ? rest : rest.slice(0, hostEnd);
  const at = hostPart.includes('@') ? hostPart.lastIndexOf('@') : rest.lastIndexOf('@');
  // The password starts in the host part, whatever it holds after.
  const colon = hostPart.indexOf(':');
  if (at === -1 || colon === -1 || colon > at) return url;
  return `${url.slice(0, start + colon + 1)}${MASK}${rest.slice(at)}`;
}
