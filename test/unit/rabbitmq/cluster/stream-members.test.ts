import type { MetadataResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_response.js';
import { describe, expect, it } from 'vitest';
import { StreamCommandError } from '../../../../src/rabbitmq/stream-command-error.js';
import { membersOf } from '../../../../src/rabbitmq/cluster/stream-members.js';

const node = (port: number) => ({ reference: port - 5560, host: '127.0.0.1', port });

/** A Metadata answer as the client decodes it, for the streams given. */
function answer(...infos: MetadataResponse['streamInfos']): MetadataResponse {
  return { streamInfos: infos } as unknown as MetadataResponse;
}

describe("a stream's members from the Metadata query", () => {
  it('should be its leader and replicas as host and port', () => {
    const response = answer(
      { streamName: 'other', responseCode: 1, leader: node(5563), replicas: [] },
      { streamName: 's', responseCode: 1, leader: node(5562), replicas: [node(5561), node(5563)] },
    );
    expect(membersOf(response, 's')).toEqual({
      stream: 's',
      leader: { host: '127.0.0.1', port: 5562 },
      replicas: [
        { host: '127.0.0.1', port: 5561 },
        { host: '127.0.0.1', port: 5563 },
      ],
    });
  });

  it('should refuse a stream that does not exist, finally, naming it and the code', () => {
    const refusing = () => membersOf(answer({ streamName: 's', responseCode: 2 }), 's');
    expect(refusing).toThrow(new StreamCommandError('metadata', 's', 2));
    expect(refusing).toThrow(expect.objectContaining({ retriable: false, responseCode: 2 }));
  });

  it.each([
    [
      'without a leader (one is being elected)',
      answer({ streamName: 's', responseCode: 1, replicas: [node(5561)] }),
    ],
    ['reported unavailable', answer({ streamName: 's', responseCode: 6 })],
    ['missing from the answer', answer()],
  ])('should refuse a stream %s as unavailable, retriable', (_, response) => {
    expect(() => membersOf(response, 's')).toThrow(
      expect.objectContaining({ name: 'StreamCommandError', retriable: true, responseCode: 6 }),
    );
  });
});
