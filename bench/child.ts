import { fork } from 'node:child_process';

/**
 * Runs a bench module in a fresh Node process with extra V8 flags and returns what it sends
 * back over IPC. The module calls `replyToParent` once.
 */
export function runInChild<T>(
  module: URL,
  args: readonly string[],
  v8Flags: readonly string[],
): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = fork(module, [...args], {
      execArgv: ['--import', 'tsx', ...v8Flags],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let reply: { value: T } | undefined;
    child.on('message', (message) => {
      reply = { value: message as T };
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0 && reply !== undefined) resolve(reply.value);
      else reject(new Error(`bench child ${module.pathname} exited with ${code} without a result`));
    });
  });
}

export function replyToParent(value: unknown): void {
  if (process.send === undefined) throw new Error('run this module through runInChild');
  process.send(value, () => process.disconnect());
}
