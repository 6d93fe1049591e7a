// Super-stream routing must agree with the RabbitMQ clients byte for byte, with the JS client's
// implementation as an oracle (the clients' own vectors:
// test/unit/common/partition-routing.test.ts).
import fc from 'fast-check';
import { murmur32 } from 'rabbitmq-stream-js-client/dist/hash/murmur32.js';
import { describe, expect, it } from 'vitest';
import { ROUTING_SEED, murmur3x86, partitionFor } from '../../src/common/partition-routing.js';
import { Coverage, propertyParameters } from '../support/arbitraries/coverage.js';

describe('super-stream routing', () => {
  it("routes every key to the partition the JS client's murmur32 picks, unsigned modulo included", () => {
    const coverage = new Coverage('routing against the JS client');
    const asciiKey = fc.string({
      unit: fc.constantFrom(...Array.from('abcXYZ019-_:./ ')),
      maxLength: 24,
    });
    const unicodeKey = fc.string({ unit: 'grapheme', maxLength: 12 });
    const loneSurrogateKey = fc
      .tuple(asciiKey, fc.integer({ min: 0xd800, max: 0xdfff }), asciiKey)
      .map(([head, unit, rest]) => head + String.fromCharCode(unit) + rest);
    const key = fc.oneof(
      { arbitrary: asciiKey, weight: 3 },
      { arbitrary: unicodeKey, weight: 3 },
      { arbitrary: loneSurrogateKey, weight: 1 },
    );
    const partitions = fc
      .integer({ min: 1, max: 16 })
      .map((n) => Array.from({ length: n }, (_, i) => `orders-${i}`));
    fc.assert(
      fc.property(fc.array(key, { minLength: 20, maxLength: 20 }), partitions, (keys, streams) => {
        coverage.run();
        for (const routingKey of keys) {
          const hash = murmur32(routingKey);
          const bytes = Buffer.from(routingKey);
          coverage.count(`tail ${bytes.length & 3} byte(s)`);
          coverage.count('multi-byte UTF-8', bytes.length > routingKey.length);
          coverage.count('lone surrogate', /\p{Cs}/u.test(routingKey));
          // Where a signed or sign-masked modulo would pick another partition.
          coverage.count(
            'unsigned modulo decides',
            (hash & 0x7fffffff) % streams.length !== hash % streams.length,
          );
          expect(murmur3x86(bytes, ROUTING_SEED)).toBe(hash);
          expect(partitionFor(routingKey, streams)).toBe(streams[hash % streams.length]);
        }
      }),
      propertyParameters(),
    );
    coverage.expectRates({
      'tail 0 byte(s)': 3,
      'tail 1 byte(s)': 3,
      'tail 2 byte(s)': 3,
      'tail 3 byte(s)': 3,
      'multi-byte UTF-8': 5,
      'lone surrogate': 1.5,
      'unsigned modulo decides': 4,
    });
  });
});
