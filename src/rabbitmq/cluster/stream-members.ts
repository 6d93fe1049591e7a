import { MetadataRequest } from 'rabbitmq-stream-js-client/dist/requests/metadata_request.js';
import type { MetadataResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_response.js';
import { OK, STREAM_NOT_AVAILABLE } from '../../common/stream-protocol.js';
import { StreamCommandError } from '../stream-command-error.js';

/**
 * A broker node as the stream protocol names it: the `advertised_host` and `advertised_port`
 * it reports in the Metadata query and in its Open response (the host name by default; set
 * them in rabbitmq.conf when clients reach the nodes under other names).
 */
export interface NodeAddress {
  readonly host: string;
  readonly port: number;
}

/** Where a stream lives on a cluster: its leader takes every write, replicas serve reads. */
export interface StreamMembers {
  readonly stream: string;
  readonly leader: NodeAddress;
  readonly replicas: readonly NodeAddress[];
}

export function sameNode(a: NodeAddress, b: NodeAddress): boolean {
  return a.host === b.host && a.port === b.port;
}

export function nodeName(node: NodeAddress): string {
  return `${node.host}:${node.port}`;
}

/** The Metadata query for one stream; send it with the caller's own deadline. */
export function membersRequest(stream: string): MetadataRequest {
  return new MetadataRequest({ streams: [stream] });
}

/**
 * The members `response` reports for `stream`. A stream without a leader (one is being
 * elected, or too few nodes are up) is refused like an unavailable stream: retriable.
 */
export function membersOf(response: MetadataResponse, stream: string): StreamMembers {
  const info = response.streamInfos.find((candidate) => candidate.streamName === stream);
  const code = info?.responseCode ?? STREAM_NOT_AVAILABLE;
  if (code !== OK) throw new StreamCommandError('metadata', stream, code);
  const leader = info?.leader;
  if (leader === undefined) throw new StreamCommandError('metadata', stream, STREAM_NOT_AVAILABLE);
  const address = ({ host, port }: NodeAddress): NodeAddress => ({ host, port });
  return {
    stream,
    leader: address(leader),
    replicas: (info?.replicas ?? []).map(address),
  };
}
