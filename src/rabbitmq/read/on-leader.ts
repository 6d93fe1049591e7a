import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { describe, isRetriable, SourceError, StreamWindowsError } from '../../common/errors.js';
import { codeName } from '../../common/stream-protocol.js';
import { abandon } from '../gaps/client-socket.js';
import { openMemberConnection, type MemberReach } from '../cluster/node-connection.js';
import { StreamCommandError } from '../stream-command-error.js';

/**
 * Runs `ask` on a connection of its own to `stream`'s leader, all within `timeoutMs`, and
 * drops the connection after (not a Close round trip: it may be the one that did not answer).
 * Failing to connect, no answer in time, or no leader to ask (the Metadata query refused while
 * one is elected) is a retriable SourceError; a final failure (a refused connection, a stream
 * that does not exist, client internals that moved) is not. `what` names the question in the
 * timeout's message.
 */
export async function onLeader<T>(
  params: ClientParams,
  stream: string,
  timeoutMs: number,
  reach: MemberReach,
  what: string,
  ask: (connection: Connection, late: () => boolean) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let connection: Connection;
  try {
    ({ connection } = await openMemberConnection(params, stream, 'leader', {
      timeoutMs,
      ...reach,
    }));
  } catch (error) {
    // The Metadata query's refusal: retriable while a leader is elected, final for a stream
    // that does not exist.
    if (error instanceof StreamCommandError) {
      throw new SourceError(
        stream,
        error.retriable,
        `asking for its leader failed with code ${error.responseCode} (${codeName(error.responseCode)})`,
      );
    }
    if (error instanceof StreamWindowsError && !isRetriable(error)) throw error;
    throw new SourceError(stream, true, describe(error));
  }
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new SourceError(stream, true, `RabbitMQ did not answer ${what} within ${timeoutMs} ms`),
        ),
      Math.max(deadline - Date.now(), 1),
    );
  });
  try {
    return await Promise.race([ask(connection, () => Date.now() >= deadline), silent]);
  } finally {
    clearTimeout(timer);
    abandon(connection);
  }
}
