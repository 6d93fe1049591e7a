// The stream name rule (checkStreamName), the one check every entry point taking a stream,
// super stream or partition name calls: the name RabbitMQ 4.0.5 serves, measured against the
// broker (docs/internals/client-gaps-and-broker-facts.md, "Stream names";
// test/integration/rabbitmq-stream-names.test.ts shows it on the broker).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { checkStreamName, maxStreamNameBytes } from '../../../src/common/stream-protocol.js';
import { partitionNames } from '../../../src/common/super-stream-layout.js';

/** What checkStreamName threw, as a ConfigError. */
function refusal(name: unknown, vhost?: string): ConfigError {
  try {
    checkStreamName('stream', name as string, vhost);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`accepted ${String(name)}`);
}

describe('the stream name rule', () => {
  it('takes up to 233 UTF-8 bytes on vhost /, as RabbitMQ serves them, and refuses one more', () => {
    expect(maxStreamNameBytes()).toBe(233);
    expect(() => checkStreamName('stream', 'x'.repeat(233))).not.toThrow();
    const error = refusal('x'.repeat(234));
    expect(error.message).toBe(
      "stream must be at most 233 UTF-8 bytes (on vhost '/': RabbitMQ stores a stream in a " +
        "directory '<vhost>_<name>_<time>' of at most 255 bytes), not 234, given: " +
        `'${'x'.repeat(32)}…'`,
    );
    expect(error.parameter).toBe('stream');
  });

  it('refuses 255 and 256 ASCII bytes, which RabbitMQ creates and never serves', () => {
    expect(refusal('x'.repeat(255)).message).toMatch(/at most 233 UTF-8 bytes .*, not 255,/);
    expect(refusal('x'.repeat(256)).message).toMatch(/at most 233 UTF-8 bytes .*, not 256,/);
    expect(refusal('x'.repeat(260)).message).toMatch(/, not 260,/);
  });

  it('counts UTF-8 bytes, not characters: 116 é pass, 117 (234 bytes) and 128 (256 bytes) do not', () => {
    expect(() => checkStreamName('stream', 'é'.repeat(116))).not.toThrow();
    expect(refusal('é'.repeat(117)).message).toMatch(/, not 234, given: 'é{32}…'$/);
    expect(refusal('é'.repeat(128)).message).toMatch(/, not 256, given: 'é{32}…'$/);
  });

  it('leaves the vhost its bytes: 224 on vhost production', () => {
    expect(maxStreamNameBytes('production')).toBe(224);
    expect(() => checkStreamName('stream', 'x'.repeat(224), 'production')).not.toThrow();
    expect(refusal('x'.repeat(225), 'production').message).toMatch(
      /^stream must be at most 224 UTF-8 bytes \(on vhost 'production': .*\), not 225,/,
    );
  });

  it.each([
    ['empty', '', "stream must be a non-empty string, given: ''"],
    ['not a string', undefined, 'stream must be a non-empty string, given: undefined'],
    [
      "starting with 'amq.'",
      'amq.orders',
      "stream must not start with 'amq.' (reserved by RabbitMQ), given: 'amq.orders'",
    ],
    [
      'with LF',
      'orders\nx',
      'stream must not contain CR or LF (RabbitMQ drops them and would use another name), ' +
        "given: 'orders\nx'",
    ],
    ['with CR', 'orders\r', /^stream must not contain CR or LF/],
  ])('refuses a name %s, as RabbitMQ refuses or renames it', (_, name, message) => {
    const error = refusal(name);
    if (typeof message === 'string') expect(error.message).toBe(message);
    else expect(error.message).toMatch(message);
  });

  it('takes any other character, and amq without its dot or further in', () => {
    for (const name of ['größe', 'rollup-é', 'a b/c', 'amq', 'orders.amq.x', '温度-😀']) {
      expect(() => checkStreamName('stream', name)).not.toThrow();
    }
  });

  it('shows a long name by its first 32 characters without splitting a surrogate pair', () => {
    const name = `${'x'.repeat(31)}${'😀'.repeat(100)}`;
    expect(refusal(name).message).toMatch(/, not 431, given: 'x{31}…'$/);
  });
});

describe('super stream partitions', () => {
  it('must each be a stream name: <name>-<key> past 233 bytes is refused as partition', () => {
    expect(partitionNames('s'.repeat(231), { partitions: 3 })).toHaveLength(3);
    expect(() => partitionNames('s'.repeat(232), { partitions: 3 })).toThrow(
      /^partition must be at most 233 UTF-8 bytes .*, not 234, given: 's{32}…'$/,
    );
    expect(() => partitionNames('orders', { bindingKeys: ['eu', 'k'.repeat(227)] })).toThrow(
      /^partition must be at most 233 UTF-8 bytes .*, not 234,/,
    );
    expect(() => partitionNames('orders', { bindingKeys: ['eu\n'] })).toThrow(
      /^partition must not contain CR or LF/,
    );
    expect(() => partitionNames('amq.orders', { partitions: 1 })).toThrow(
      /^superStream must not start with 'amq.'/,
    );
    expect(() => partitionNames('s'.repeat(223), { partitions: 1 }, 'production')).toThrow(
      /^partition must be at most 224 UTF-8 bytes \(on vhost 'production'/,
    );
  });
});
