// connect() takes the URLs of several nodes of one cluster (as the Java client's `uris`): the
// list is checked before anything connects, and a reader that found a node frozen goes to
// another member. No broker: the checks come first, and member choice is a pure function.
import { describe, expect, it, vi } from 'vitest';
import { BrokerUnavailableError, ConfigError } from '../../../src/common/errors.js';
import { connect } from '../../../src/rabbitmq/index.js';
import { parseStreamUrls } from '../../../src/rabbitmq/connection-url.js';
import { KnownNodes, PASSED_OVER_MS } from '../../../src/rabbitmq/cluster/known-nodes.js';
import { memberCandidates } from '../../../src/rabbitmq/cluster/node-connection.js';
import { keepingLogger } from '../../support/doubles/keeping-logger.js';
import { SECRET, shownText } from '../../support/secrets/shown-text.js';

const node = (port: number) => ({ host: '127.0.0.1', port });

describe('connect() with several URLs', () => {
  it.each([
    [[], 'urls must name at least one node, given: []'],
    [
      ['rabbitmq-stream://guest:guest@127.0.0.1:1/', 'amqp://guest:guest@127.0.0.1:2/'],
      "urls[1] must start with rabbitmq-stream:// or rabbitmq-stream+tls://, given: 'amqp://guest:***@127.0.0.1:2/'",
    ],
    [
      ['rabbitmq-stream://guest:guest@127.0.0.1:1/', 'not a url'],
      "urls[1] must be a rabbitmq-stream:// URL, given: 'not a url'",
    ],
    [
      [
        'rabbitmq-stream://guest:guest@127.0.0.1:1/',
        'rabbitmq-stream://guest:guest@127.0.0.1:2/other',
      ],
      "urls[1] must have urls[0]'s user, password, virtual host and scheme (one cluster), given: '127.0.0.1:2'",
    ],
    [['rabbitmq-stream://guest:guest@127.0.0.1:1/', 42], 'urls[1] must be a string, given: 42'],
  ])('should refuse %j before connecting', async (urls, message) => {
    const connecting = connect(urls as string[]);
    await expect(connecting).rejects.toThrow(ConfigError);
    await expect(connecting).rejects.toThrow(message);
  });

  it("should read the first URL's settings and every URL's node, in order", () => {
    const { params, nodes } = parseStreamUrls([
      'rabbitmq-stream://u:p@10.0.0.1:5561/v',
      'rabbitmq-stream://u:p@10.0.0.2/v',
    ]);
    expect(params).toMatchObject({ hostname: '10.0.0.1', port: 5561, username: 'u', vhost: 'v' });
    expect(nodes).toEqual([
      { host: '10.0.0.1', port: 5561 },
      { host: '10.0.0.2', port: 5552 },
    ]);
  });

  it('should fail naming every node when none can be reached', async () => {
    const connecting = connect([
      'rabbitmq-stream://guest:guest@127.0.0.1:1/',
      'rabbitmq-stream://guest:guest@127.0.0.1:2/',
    ]);
    await expect(connecting).rejects.toThrow(
      /127\.0\.0\.1:1.*nor at the other known nodes 127\.0\.0\.1:2/,
    );
  });
});

describe('KnownNodes', () => {
  it('should keep the URLs first, then each member once, in the order met', () => {
    const known = new KnownNodes([node(1), node(2)]);
    known.addMembers({ stream: 's', leader: node(3), replicas: [node(2), node(4)] });
    known.addMembers({ stream: 's', leader: node(4), replicas: [] });
    expect(known.list()).toEqual([node(1), node(2), node(3), node(4)]);
  });

  it('should put the nodes a race passed over after the others for a while, and a winner back in turn', () => {
    vi.useFakeTimers();
    try {
      const known = new KnownNodes();
      const all = [node(1), node(2), node(3)];
      expect(known.inTurn(all)).toEqual(all);
      known.raced(node(3), [node(1), node(2)]); // 1 hung, 2 was slower than 3
      expect(known.inTurn(all)).toEqual([node(3), node(1), node(2)]);
      known.raced(node(2), [node(3)]);
      expect(known.inTurn(all)).toEqual([node(2), node(1), node(3)]);
      vi.advanceTimersByTime(PASSED_OVER_MS);
      expect(known.inTurn(all)).toEqual(all);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('memberCandidates', () => {
  const members = { stream: 's', leader: node(2), replicas: [node(1), node(3)] };

  it('should read from the replicas, and write on the leader', () => {
    expect(memberCandidates(members, 'replica')).toEqual([node(1), node(3)]);
    expect(memberCandidates(members, 'leader')).toEqual([node(2)]);
  });

  it('should read elsewhere than on a node found frozen', () => {
    expect(memberCandidates(members, 'replica', node(1))).toEqual([node(3)]);
  });

  it('should read on the leader when the frozen node is the only replica, and on it when it is the only member', () => {
    const two = { stream: 's', leader: node(2), replicas: [node(1)] };
    expect(memberCandidates(two, 'replica', node(1))).toEqual([node(2)]);
    const one = { stream: 's', leader: node(1), replicas: [] };
    expect(memberCandidates(one, 'replica', node(1))).toEqual([node(1)]);
  });

  it('should never write elsewhere than on the leader', () => {
    expect(memberCandidates(members, 'leader', node(2))).toEqual([node(2)]);
  });
});

describe('connect() and passwords', () => {
  const good = `rabbitmq-stream://guest:${SECRET}@127.0.0.1:1/`;

  it.each([
    ['a URL of another scheme', `amqp://guest:${SECRET}@127.0.0.1:1/`],
    ['a URL that is no URL (a port in words)', `rabbitmq-stream://guest:${SECRET}@127.0.0.1:port/`],
    ['a password with an @ and a /', `amqp://guest:${SECRET}@a/b@127.0.0.1:1/`],
    ['a list with a URL of another scheme', [good, `amqp://guest:${SECRET}@127.0.0.1:2/`]],
    ['a list signing in differently', [good, `rabbitmq-stream://other:${SECRET}@127.0.0.1:2/`]],
  ])('should refuse %s without showing the password', async (_, where) => {
    const error = await connect(where).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(shownText(error)).not.toContain(SECRET);
  });

  it('should refuse one URL where a list was expected without showing the password', () => {
    expect(() => parseStreamUrls(good as unknown as string[])).toThrow(
      "urls must name at least one node, given: 'rabbitmq-stream://guest:***@127.0.0.1:1/'",
    );
  });

  it('should show the user of a refused URL and mask its password', async () => {
    const error = (await connect(`amqp://guest:${SECRET}@127.0.0.1:1/`).catch(
      (e: unknown) => e,
    )) as ConfigError;
    expect(error.message).toContain("given: 'amqp://guest:***@127.0.0.1:1/'");
    expect(error.given).toBe('amqp://guest:***@127.0.0.1:1/');
  });

  it('should name an unreachable node by its address in the error and the log lines', async () => {
    const logger = keepingLogger();
    const connecting = connect([good, `rabbitmq-stream://guest:${SECRET}@127.0.0.1:2/`], {
      logger,
      waitForBrokerMs: 300,
    });
    const error = await connecting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BrokerUnavailableError);
    // It waited and retried, saying so.
    expect(logger.lines.some(([level]) => level === 'warn')).toBe(true);
    expect(shownText(error, logger.lines)).not.toContain(SECRET);
  });
});
