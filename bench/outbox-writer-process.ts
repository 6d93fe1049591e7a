import { fork, type ChildProcess } from 'node:child_process';
import type { WriteRequest, Written } from './outbox-writers.js';

/** The writers' child process (./outbox-writers-child.ts): one request at a time. */
export class WriterProcess {
  private constructor(private readonly child: ChildProcess) {}

  static async start(postgresUrl: string): Promise<WriterProcess> {
    const child = fork(new URL('./outbox-writers-child.ts', import.meta.url), [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, POSTGRES_URL: postgresUrl },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) =>
        reject(new Error(`the outbox bench's writers exited (${code})`)),
      );
    });
    return new WriterProcess(child);
  }

  write(request: WriteRequest): Promise<Written> {
    return new Promise((resolve, reject) => {
      const exited = (code: number | null): void =>
        reject(new Error(`the outbox bench's writers exited (${code}) while writing`));
      this.child.once('exit', exited);
      this.child.once('message', (message: { written?: Written; error?: string }) => {
        this.child.off('exit', exited);
        if (message.written !== undefined) resolve(message.written);
        else reject(new Error(`the outbox bench's writers failed: ${message.error ?? '?'}`));
      });
      this.child.send(request);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send({ type: 'exit' });
    await exited;
  }
}
