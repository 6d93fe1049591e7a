// Single active consumer groups on the embedded broker against the rule RabbitMQ documents
// (and rabbit_stream_sac_coordinator.erl implements): after any joins and leaves, the active
// member of a partition's group is members[partition index rem size] in join order (the first
// member on a plain stream), and no member is ever activated while another one of its group
// has not yet answered its step-down.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker, type SingleActiveMember } from '../../src/memory/index.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';

const INSTANCES = 5;

const scenario = fc.record({
  superStream: fc.boolean(),
  partitions: fc.integer({ min: 1, max: 4 }),
  /** Microtask turns each instance's callbacks take: answers overlap with other updates. */
  ticks: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: INSTANCES, maxLength: INSTANCES }),
  /** Each toggle joins an instance to every stream, or makes it leave if it is a member; with
   * `settle`, every callback finishes before the next toggle, otherwise updates pile up. */
  toggles: fc.array(
    fc.record({ instance: fc.integer({ min: 0, max: INSTANCES - 1 }), settle: fc.boolean() }),
    { minLength: 4, maxLength: 25 },
  ),
});

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

describe('single active consumer groups (property)', () => {
  it(
    'activate members[index rem size] after any joins and leaves, one step-down answered at a time',
    async () => {
      const coverage = new Coverage('single active consumer groups');
      await fc.assert(
        fc.asyncProperty(scenario, async ({ superStream, partitions, ticks, toggles }) => {
          coverage.run();
          const broker = new MemoryBroker();
          const streams = superStream
            ? broker.createSuperStream('orders', { partitions })
            : ['events'];
          if (!superStream) broker.createStream('events');
          /** Model: instances in join order. */
          const joined: number[] = [];
          const members = new Map<number, SingleActiveMember[]>();
          const instanceOf = new Map<SingleActiveMember, number>();
          /** Per stream: the instance activated and not yet done stepping down (or gone). */
          const holder = new Map<string, number>();
          const violations: string[] = [];

          const join = (instance: number): void => {
            const delay = ticks[instance] ?? 0;
            const own = streams.map((stream) => {
              const member = broker.singleActive(stream, {
                name: 'job',
                resumeFrom: async () => {
                  const other = holder.get(stream);
                  if (other !== undefined) {
                    violations.push(`${instance} activated on ${stream} while ${other} held it`);
                  }
                  holder.set(stream, instance);
                  await turns(delay);
                  return 0n;
                },
                onDeactivate: async () => {
                  coverage.count('step-downs');
                  await turns(delay);
                  if (holder.get(stream) === instance) holder.delete(stream);
                },
              });
              instanceOf.set(member, instance);
              return member;
            });
            members.set(instance, own);
            joined.push(instance);
          };

          const leave = async (instance: number): Promise<void> => {
            for (const member of members.get(instance) ?? []) {
              const group = broker.consumerGroup(member.stream, 'job');
              coverage.count('a stepping-down member leaves', group.deactivating === member);
              coverage.count('the active member leaves', group.active === member);
              if (holder.get(member.stream) === instance) holder.delete(member.stream);
              await member.close();
            }
            members.delete(instance);
            joined.splice(joined.indexOf(instance), 1);
          };

          const check = (): void => {
            streams.forEach((stream, index) => {
              const group = broker.consumerGroup(stream, 'job');
              expect(group.members.map((member) => instanceOf.get(member))).toEqual(joined);
              expect(group.deactivating).toBeUndefined();
              const expected = superStream ? joined[index % joined.length] : joined[0];
              const active = group.active === undefined ? undefined : instanceOf.get(group.active);
              expect(active).toBe(expected);
              const delivering = group.members.filter((member) => member.active);
              expect(delivering.map((member) => instanceOf.get(member))).toEqual(
                expected === undefined ? [] : [expected],
              );
              coverage.count('checked groups of 2+ members', joined.length >= 2);
              coverage.count('checked groups of 3+ members', joined.length >= 3);
            });
          };

          for (const { instance, settle: settleAfter } of toggles) {
            if (members.has(instance)) {
              await leave(instance);
            } else {
              const stepping = streams.some(
                (stream) => broker.consumerGroup(stream, 'job').deactivating !== undefined,
              );
              coverage.count('joins while a step-down is answered', stepping);
              join(instance);
            }
            if (settleAfter) {
              await settle();
              check();
            }
          }
          await settle();
          check();
          expect(violations).toEqual([]);
          await Promise.all([...members.keys()].map((instance) => leave(instance)));
        }),
        propertyParameters(),
      );
      coverage.expectRates({
        'step-downs': 1.2,
        'a stepping-down member leaves': 0.3,
        'the active member leaves': 2,
        'checked groups of 2+ members': 5,
        'checked groups of 3+ members': 2,
        'joins while a step-down is answered': 0.3,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
