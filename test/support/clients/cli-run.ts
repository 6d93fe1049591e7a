// Runs the stream-windows command in-process with recorded stdout and stderr (neither a
// terminal) and an empty environment, or the one given.
import { runCli } from '../../../src/cli/cli.js';

export async function runRecorded(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const sink = (name: 'stdout' | 'stderr') =>
    ({
      write: (chunk: string) => {
        out[name] += chunk;
        return true;
      },
    }) as unknown as NodeJS.WritableStream;
  const code = await runCli(args, { stdout: sink('stdout'), stderr: sink('stderr'), env });
  return { code, ...out };
}
