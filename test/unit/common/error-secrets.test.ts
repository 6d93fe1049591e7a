// No error of the library carries a password: its message (and so its stack), a ConfigError's
// `given`, and the words describe() makes of another library's error, which may echo a
// connection string, are masked by the one rule of src/common/redact-secrets.ts.
import { describe as group, expect, it } from 'vitest';
import {
  BrokerUnavailableError,
  ConfigError,
  ProcessingError,
  StreamWindowsError,
  describe,
} from '../../../src/common/errors.js';
import { SECRET, shownText } from '../../support/secrets/shown-text.js';

const URL = `amqp://guest:${SECRET}@127.0.0.1:5552/`;

group('errors and passwords', () => {
  it('should mask a URL in a ConfigError: message, stack and given', () => {
    const error = new ConfigError('url', 'must start with rabbitmq-stream://', URL);
    expect(error.message).toBe(
      "url must start with rabbitmq-stream://, given: 'amqp://guest:***@127.0.0.1:5552/'",
    );
    expect(error.given).toBe('amqp://guest:***@127.0.0.1:5552/');
    expect(error.stack).toContain("given: 'amqp://guest:***@127.0.0.1:5552/'");
    expect(shownText(error)).not.toContain(SECRET);
  });

  it('should mask an options object given to a ConfigError in its message', () => {
    const options = { connectionString: `postgres://u:${SECRET}@h/db`, password: SECRET };
    const error = new ConfigError('postgres()', 'takes a pg.Pool', options);
    expect(error.message).toBe(
      'postgres() takes a pg.Pool, given: {"connectionString":"postgres://u:***@h/db","password":"***"}',
    );
  });

  it('should mask every message of the library, and its stack, whatever the class', () => {
    const errors = [
      new StreamWindowsError(`cannot reach ${URL}`),
      new BrokerUnavailableError(`cannot connect to ${URL}`, { cause: new Error('refused') }),
      new ProcessingError('s', 1n, 'map', new Error(`lookup failed: host=h password=${SECRET}`)),
    ];
    for (const error of errors) {
      expect(error.message).toContain('***');
      expect(error.message).not.toContain(SECRET);
      expect(error.stack).not.toContain(SECRET);
    }
  });

  it("should mask another library's error when put into words", () => {
    expect(describe(new Error(`connect to postgres://u:${SECRET}@h/db failed`))).toBe(
      'connect to postgres://u:***@h/db failed',
    );
    expect(describe(`sslpassword=${SECRET}`)).toBe('sslpassword=***');
  });
});
