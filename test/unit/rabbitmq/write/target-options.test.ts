// The RabbitMQ target's settings are checked where they are given: a confirm timeout Node
// cannot keep as a timer (Infinity, over 2^31 - 1 ms) would fire after about 1 ms instead.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../src/common/errors.js';
import { ScriptedLink, scriptedTarget } from '../scripted-link.js';

describe('the RabbitMQ target options', () => {
  it.each([Infinity, 3e9, 2 ** 31, NaN, 0, -1])('refuses confirmTimeoutMs %s', (value) => {
    const create = () => scriptedTarget(new ScriptedLink(), { confirmTimeoutMs: value });

    expect(create).toThrow(ConfigError);
    expect(create).toThrow(/^confirmTimeoutMs must be/);
  });

  it('accepts confirmTimeoutMs up to 2^31 - 1 ms', () => {
    expect(() =>
      scriptedTarget(new ScriptedLink(), { confirmTimeoutMs: 2 ** 31 - 1 }),
    ).not.toThrow();
  });
});
