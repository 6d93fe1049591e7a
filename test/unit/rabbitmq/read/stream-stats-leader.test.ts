// streamStats asks the stream's leader: any node answers StreamStats, but from its own member,
// and a replica's committed chunk id lags the leader's (./source-end-offset.ts reads the
// stream's end from it).
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

/** Connected through the replica's node, as a source whose URL names it. */
const params = { hostname: 'node', port: REPLICA, username: 'u', password: 'p', vhost: '/' };

describe("streamStats on a cluster, through a replica's node", () => {
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

  it.each([
    ['a stream without a leader yet (being elected)', 0x06, true],
    ['a stream that does not exist', 0x02, false],
  ])(
    'reports %s (Metadata code %i) as a SourceError, retriable as the code says',
    async (_what, code, retriable) => {
      cluster.metadataCode = code;

      const error = await streamStats(params, 'sensors', 100).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(SourceError);
      expect(isRetriable(error)).toBe(retriable);
      expect(String(error)).toContain("stream 'sensors'");
    },
  );
});
