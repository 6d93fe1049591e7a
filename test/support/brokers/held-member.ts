// Holds back one member of a stream on the local 3-node cluster, as a replica that lags does:
// its osiris process is suspended (sys:suspend, through rabbitmqctl eval), so it writes no
// chunk and learns no commit from the leader, while its node answers everything else. Readers
// on that node are served from the chunks it had (osiris caches the member's reader context),
// and the leader commits with the third member. Unlike SIGSTOP, the lag lasts until released,
// not until the node has caught up after its thaw.
import { rabbitmqctl, type ClusterNode } from './rabbitmq-cluster.js';

/** The Erlang expression that applies `call` (sys:suspend, sys:resume) to `stream`'s member on the node. */
function onLocalMember(stream: string, call: string): string {
  return (
    `{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, <<"${stream}">>)), ` +
    `#{name := Name} = amqqueue:get_type_state(Q), ` +
    `{ok, Pid} = rabbit_stream_coordinator:local_pid(Name), ${call}(Pid).`
  );
}

/**
 * Suspends `stream`'s member on node `n`; returns the function that resumes it, which the
 * caller must call in a `finally`.
 */
export async function holdMember(n: ClusterNode, stream: string): Promise<() => Promise<void>> {
  if (!/^[\w.-]+$/.test(stream)) throw new Error(`stream name '${stream}' is not plain`);
  await rabbitmqctl(n, ['eval', onLocalMember(stream, 'sys:suspend')]);
  return () => rabbitmqctl(n, ['eval', onLocalMember(stream, 'sys:resume')]);
}
