// Questions for a stream's leader (src/rabbitmq/read/on-leader.ts): streamStats asks the
// leader, as any node answers StreamStats but from its own member, and a replica's committed
// chunk id lags the leader's (source-end-offset.ts reads the stream's end from it); the stored
// offset's QueryOffset goes there too. No leader to ask is retriable for both.
import { describe, expect, it, vi } from 'vitest';
import { MetadataRequest } from 'rabbitmq-stream-js-client/dist/requests/metadata_request.js';
import { isRetriable, SourceError } from '../../../../src/common/errors.js';

/** What the fake cluster's Metadata query answers, and each node's committed chunk id. */
const cluster = vi.hoisted(() => ({
  metadataCode: 1,
  committed: new Map<number, bigint>(),
  opened: [] as number[],
}));
const LEADER = 2;
const REPLICA = 1;

vi.mock('../../../../src/rabbitmq/gaps/handshake.js', () => ({
  openConnection: (params: { hostname: string; port: number }) => {
    cluster.opened.push(params.port);
    const host = params.hostname;
    const port = params.port;
    return Promise.resolve({
      getConnectionInfo: () => ({ host, port }),
      sendAndWait: (request: unknown) =>
        Promise.resolve(
          request instanceof MetadataRequest
            ? {
                streamInfos: [
                  {
                    streamName: 'sensors',
                    responseCode: cluster.metadataCode,
                    leader: { host: 'node', port: LEADER },
                    replicas: [{ host: 'node', port: REPLICA }],
                  },
                ],
              }
            : {
                code: 1,
                statistics: { firstChunkId: 0n, committedChunkId: cluster.committed.get(port) },
              },
        ),
    });
  },
}));
vi.mock('../../../../src/rabbitmq/gaps/client-socket.js', () => ({ abandon: () => undefined }));
const { streamStats } = await import('../../../../src/rabbitmq/read/stream-stats.js');
const { queryStoredOffset } = await import('../../../../src/rabbitmq/read/stored-offset.js');

/** Connected through the replica's node, as a source whose URL names it. */
const params = { hostname: 'node', port: REPLICA, username: 'u', password: 'p', vhost: '/' };

describe("questions for a stream's leader, through a replica's node", () => {
  it("answers the leader's committed chunk id, not the replica's it connected to first", async () => {
    cluster.metadataCode = 1;
    cluster.committed = new Map([
      [REPLICA, 10n],
      [LEADER, 20n],
    ]);
    cluster.opened = [];

    const { committedChunkId } = await streamStats(params, 'sensors', 100);

    expect(committedChunkId).toBe(20n);
    expect(cluster.opened).toEqual([REPLICA, LEADER]);
  });

  const questions = {
    streamStats: () => streamStats(params, 'sensors', 100),
    queryStoredOffset: () => queryStoredOffset(params, 'sensors', 'ref', 100),
  };
  it.each([
    ['streamStats', 'a stream without a leader yet (being elected)', 0x06, true],
    ['streamStats', 'a stream that does not exist', 0x02, false],
    ['queryStoredOffset', 'a stream without a leader yet (being elected)', 0x06, true],
    ['queryStoredOffset', 'a stream that does not exist', 0x02, false],
  ] as const)(
    '%s reports %s (Metadata code %i) as a SourceError, retriable as the code says',
    async (question, _what, code, retriable) => {
      cluster.metadataCode = code;

      const error = await questions[question]().catch((e: unknown) => e);

      expect(error).toBeInstanceOf(SourceError);
      expect(isRetriable(error)).toBe(retriable);
      expect(String(error)).toContain(
        `stream 'sensors' failed: asking for its leader failed with code ${code}`,
      );
    },
  );
});
