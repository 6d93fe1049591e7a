// The one rule for what the library says about a broker or a database: a connection URL or
// connection string keeps its user and loses its password, also when `new URL` cannot read it.
import { describe, expect, it } from 'vitest';
import { MASK, redactSecrets } from '../../../src/common/redact-secrets.js';

const SECRET = 's3cr3t-pw';

describe('redactSecrets', () => {
  it.each([
    // URLs: the user stays, the password goes.
    [
      'rabbitmq-stream://guest:s3cr3t-pw@127.0.0.1:5552/',
      'rabbitmq-stream://guest:***@127.0.0.1:5552/',
    ],
    ['rabbitmq-stream+tls://u:s3cr3t-pw@h/v', 'rabbitmq-stream+tls://u:***@h/v'],
    ['amqp://guest:s3cr3t-pw@127.0.0.1:5552/', 'amqp://guest:***@127.0.0.1:5552/'],
    ['postgres://u:s3cr3t-pw@h:5433/db', 'postgres://u:***@h:5433/db'],
    ['postgresql://u:s3cr3t-pw@[::1]:5433/db', 'postgresql://u:***@[::1]:5433/db'],
    ['jdbc:postgresql://u:s3cr3t-pw@h/db', 'jdbc:postgresql://u:***@h/db'],
    ['redis://:s3cr3t-pw@h', 'redis://:***@h'],
    // Malformed: an @ or a / in the password, a bad port, percent escapes, quotes.
    ['amqp://guest:s3cr3t@pw@host', 'amqp://guest:***@host'],
    ['amqp://guest:s3cr3t/pw@host/vhost', 'amqp://guest:***@host/vhost'],
    ['rabbitmq-stream://guest:s3cr3t-pw@host:port/', 'rabbitmq-stream://guest:***@host:port/'],
    ['amqp://gu%40est:s3cr3t%2Dpw@h/v%2F', 'amqp://gu%40est:***@h/v%2F'],
    ['amqp://u:s3cr3t\'pw"@h/', 'amqp://u:***@h/'],
    // The price of a / in a password: a port and an @ in the path read as one.
    ['http://h:8443/a@b', 'http://h:***@b'],
    // Parameters of a URL.
    [
      'postgres://u:s3cr3t-pw@h/db?sslmode=require&password=s3cr3t-pw&sslpassword=s3cr3t-pw#x',
      'postgres://u:***@h/db?sslmode=require&password=***&sslpassword=***#x',
    ],
    ['postgres://h/db?user=u&password=s3cr3t-pw', 'postgres://h/db?user=u&password=***'],
    // libpq key=value strings, quoted values with escapes, environment variables.
    ['host=h port=5433 password=s3cr3t-pw dbname=d', 'host=h port=5433 password=*** dbname=d'],
    ["host=h password = 's3cr3t pw \\' x' user=u", 'host=h password = *** user=u'],
    ['Host=h;Password=s3cr3t-pw;Database=d', 'Host=h;Password=***;Database=d'],
    ['PGPASSWORD=s3cr3t-pw psql -h h', 'PGPASSWORD=*** psql -h h'],
    ['sslpassword=s3cr3t-pw passwd=s3cr3t-pw pwd=s3cr3t-pw', 'sslpassword=*** passwd=*** pwd=***'],
    // Objects as JSON or as Node prints them.
    [
      '{"connectionString":"postgres://u:s3cr3t-pw@h/d","password":"s3cr3t-pw"}',
      '{"connectionString":"postgres://u:***@h/d","password":"***"}',
    ],
    [
      "{ user: 'u', password: 's3cr3t-pw', ssl: { passphrase: 's3cr3t-pw' } }",
      "{ user: 'u', password: '***', ssl: { passphrase: '***' } }",
    ],
    ['{"password":"s3cr3t\\"pw"}', '{"password":"***"}'],
    // Several URLs: a comma-separated list, and URLs within a sentence.
    [
      'rabbitmq-stream://u:s3cr3t-pw@h1:5561/,rabbitmq-stream://u:s3cr3t-pw@h2:5562/',
      'rabbitmq-stream://u:***@h1:5561/,rabbitmq-stream://u:***@h2:5562/',
    ],
    [
      "url must start with rabbitmq-stream://, given: 'amqp://guest:s3cr3t-pw@127.0.0.1:5552/' (or <postgres://u:s3cr3t-pw@h>)",
      "url must start with rabbitmq-stream://, given: 'amqp://guest:***@127.0.0.1:5552/' (or <postgres://u:***@h>)",
    ],
  ])('should mask %s', (text, masked) => {
    const redacted = redactSecrets(text);
    expect(redacted).toBe(masked);
    expect(redacted).not.toMatch(/s3cr3t/);
    // Masking again changes nothing: a message built from a masked one stays as it is.
    expect(redactSecrets(redacted)).toBe(redacted);
  });

  it.each([
    'rabbitmq-stream://guest@127.0.0.1:5552/',
    'rabbitmq-stream://127.0.0.1:5552/vhost',
    'https://h:8443/path?x=1',
    'file:///tmp/a:b@c',
    'https://user@h/a:b@c',
    "urls[1] must have urls[0]'s user, password, virtual host and scheme (one cluster)",
    "a refused user or password: user 'guest': authentication failure (code 8)",
    'stream orders@eu at offset 42: value: 3',
    '',
  ])('should leave %j as it is: no password in it', (text) => {
    expect(redactSecrets(text)).toBe(text);
  });

  it('should mask with three stars', () => {
    expect(MASK).toBe('***');
    expect(redactSecrets(`amqp://u:${SECRET}@h`)).toBe(`amqp://u:${MASK}@h`);
  });

  it('should take linear time on long input without a match', () => {
    const long = `${'a'.repeat(200_000)} ${'password'.repeat(20_000)} amqp://${':'.repeat(100_000)}`;
    const started = performance.now();
    redactSecrets(long);
    // A quadratic pattern would take minutes on this; linear takes milliseconds.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
