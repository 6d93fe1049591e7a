import { spawn } from 'node:child_process';
import { fstatSync, writeSync } from 'node:fs';

/** How often a socket's other end is asked whether it is still there. */
const SOCKET_PROBE_MS = 250;
const NOTHING = Buffer.alloc(0);

/** The reader of stdout going away, heard while the command has nothing to write. */
export interface ReaderWatch {
  /** Aborted once stdout's reader is gone. */
  readonly signal: AbortSignal;
  dispose(): void;
}

/**
 * Watches the reader of `stdout` (file descriptor `fd`) for a command that may wait long
 * between lines (`tail --json | head -n 3` on a quiet target): Node reports a gone reader only
 * at the next write, which may be hours away. Heard at once:
 * - a write's EPIPE, whatever stdout is;
 * - a pipe (a shell's `|`): Node has no way to wait on a pipe's write end (libuv reads no
 *   write-only fd, and Linux lets a zero-byte write succeed without a reader), so a helper does:
 *   GNU `tail -f` (coreutils 8.28+) watches its stdout, our pipe, and dies of SIGPIPE the moment
 *   the reader goes; `--pid` ends it with us should we be killed. Without GNU tail on the PATH
 *   the reader is heard at the next write, as before;
 * - a Unix socket (the stdio pipes of a parent written in Node, libuv's socketpairs): a
 *   zero-byte write fails with EPIPE once the other end is closed, and not when it merely shut
 *   its own writing side, so it is probed every SOCKET_PROBE_MS.
 * A terminal that closes sends SIGHUP, which ends the process at once (Node's default): not a
 * stop signal, since Node 20 aborts at a normal exit once its terminal is gone (resetting the
 * terminal's modes fails with EIO). A file has no reader.
 */
export function watchReader(stdout: NodeJS.WritableStream, fd = 1): ReaderWatch {
  const gone = new AbortController();
  const onError = (error: NodeJS.ErrnoException): void => {
    if (error.code === 'EPIPE') gone.abort();
  };
  stdout.on('error', onError);
  const stops: (() => void)[] = [() => void stdout.off('error', onError)];
  const kind = fstatSync(fd);
  if (kind.isFIFO()) stops.push(pipeWatch(fd, gone));
  if (kind.isSocket()) stops.push(socketProbe(fd, gone));
  return {
    signal: gone.signal,
    dispose: () => {
      for (const stop of stops) stop();
    },
  };
}

function pipeWatch(fd: number, gone: AbortController): () => void {
  const helper = spawn('tail', ['-f', `--pid=${process.pid}`, '/dev/null'], {
    stdio: ['ignore', fd, 'ignore'],
  });
  // No GNU tail (ENOENT, or another tail refusing --pid): the next write hears the reader.
  helper.on('error', () => undefined);
  helper.on('exit', (_code, signal) => {
    if (signal === 'SIGPIPE') gone.abort();
  });
  helper.unref();
  // It holds the pipe open: the reader sees its end only once the helper is gone too.
  const kill = (): void => void helper.kill();
  process.on('exit', kill);
  return () => {
    process.off('exit', kill);
    kill();
  };
}

function socketProbe(fd: number, gone: AbortController): () => void {
  const probe = setInterval(() => {
    try {
      writeSync(fd, NOTHING);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE' || code === 'ECONNRESET') gone.abort();
    }
  }, SOCKET_PROBE_MS);
  probe.unref();
  return () => clearInterval(probe);
}
