// Super-stream routing must agree with the RabbitMQ clients byte for byte: vectors from the
// Java and JS clients' own tests (the JS client's implementation as an oracle:
// test/property/partition-routing.test.ts).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { ROUTING_SEED, murmur3x86, partitionFor } from '../../../src/common/partition-routing.js';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('super-stream routing', () => {
  it('hashes as the Java client does with its default seed (HashUtilsTest.murmur3WithDefaultSeed)', () => {
    const hashes = ['hello', 'brave', 'new', 'world'].map((key) =>
      murmur3x86(utf8(key), ROUTING_SEED),
    );
    expect(hashes).toEqual([1321743225, 3825276426, 2970740106, 2453398188]);
  });

  it('hashes as the Java client does with seed 42 (HashUtilsTest.murmur3WithSeed)', () => {
    const hashes = ['hello', 'brave', 'new', 'world'].map((key) => murmur3x86(utf8(key), 42));
    expect(hashes).toEqual([3806057185, 619588758, 1483300585, 1145629360]);
  });

  it("hashes as the JS client's own unit test expects", () => {
    const keys = ['rabbit', 'coders51', 'd4c39ae6-2fc3-41a2-8771-161251e57d1a'];
    const hashes = keys.map((key) => murmur3x86(utf8(key), ROUTING_SEED));
    expect(hashes).toEqual([3591948756, 1856831182, 1772425613]);
  });

  it("routes hello1..hello10 over three partitions as the Java client's HashRoutingStrategyTest expects", () => {
    const partitions = ['invoices-01', 'invoices-02', 'invoices-03'];
    const routes = Array.from({ length: 10 }, (_, i) => partitionFor(`hello${i + 1}`, partitions));
    expect(routes).toEqual([
      'invoices-02',
      'invoices-01',
      'invoices-02',
      'invoices-03',
      'invoices-01',
      'invoices-03',
      'invoices-01',
      'invoices-02',
      'invoices-01',
      'invoices-03',
    ]);
  });

  it("spreads hello0..hello19 over three partitions 9, 7 and 4 as the JS client's end-to-end test expects", () => {
    const partitions = ['s-0', 's-1', 's-2'];
    const counts = partitions.map(
      (partition) =>
        Array.from({ length: 20 }, (_, i) => partitionFor(`hello${i}`, partitions)).filter(
          (routed) => routed === partition,
        ).length,
    );
    expect(counts).toEqual([9, 7, 4]);
  });

  it('refuses to route over no partition with a ConfigError', () => {
    expect(() => partitionFor('key', [])).toThrow(ConfigError);
    expect(() => partitionFor('key', [])).toThrow('partitions must not be empty, given: []');
  });
});
