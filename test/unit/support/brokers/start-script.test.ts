import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runStartScript } from '../../../support/brokers/start-script.js';

const folders: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/**
 * A script that counts its runs in a file beside it; on the runs listed in `failing` it
 * ends as `how` says, otherwise it prints a URL.
 */
function script(failing: number[], how: string): { path: string; runs: () => number } {
  const folder = mkdtempSync(join(tmpdir(), 'start-script-'));
  folders.push(folder);
  const path = join(folder, 'start.sh');
  const count = join(folder, 'runs');
  writeFileSync(
    path,
    `#!/usr/bin/env bash
set -euo pipefail
runs=$(( $(cat ${count} 2>/dev/null || echo 0) + 1 ))
echo $runs > ${count}
case " ${failing.join(' ')} " in
  *" $runs "*) ${how} ;;
esac
echo started >&2
echo rabbitmq-stream://127.0.0.1:5552/
`,
  );
  chmodSync(path, 0o755);
  return {
    path,
    runs: () => (existsSync(count) ? Number(readFileSync(count, 'utf8')) : 0),
  };
}

const start = (path: string) => ({
  script: path,
  args: ['start'],
  what: 'a RabbitMQ stream broker',
  variable: 'RABBITMQ_STREAM_URL',
  timeoutMs: 10_000,
});

describe('runStartScript', () => {
  it('runs a start once more when a step of it was killed by a signal (bash exits 143)', async () => {
    const said = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    // The step is a foreground child killed by SIGTERM, as in the CI run that failed.
    const { path, runs } = script([1], 'sleep 5 & kill -TERM $!; wait $!');
    await expect(runStartScript(start(path))).resolves.toBe('rabbitmq-stream://127.0.0.1:5552/\n');
    expect(runs()).toBe(2);
    expect(said).toHaveBeenCalledWith(
      expect.stringContaining('was ended by a signal (exit code 143'),
    );
  });

  it('does not run a start again that failed by itself, and names the script and its words', async () => {
    const { path, runs } = script([1], 'echo "rabbitmq.sh: port 5552 is taken" >&2; exit 1');
    await expect(runStartScript(start(path))).rejects.toThrow(
      "integration tests need a RabbitMQ stream broker: RABBITMQ_STREAM_URL is not set and 'scripts/start.sh start' failed (exit code 1): rabbitmq.sh: port 5552 is taken",
    );
    expect(runs()).toBe(1);
  });

  it('runs a start at most twice: a second signal fails the setup', async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const { path, runs } = script([1, 2], 'kill -KILL $$');
    await expect(runStartScript(start(path))).rejects.toThrow(
      "'scripts/start.sh start' failed (signal SIGKILL)",
    );
    expect(runs()).toBe(2);
  });

  it('does not run a start again that outlived its time (its steps may still run), and says it timed out', async () => {
    const { path, runs } = script([1], 'sleep 5');
    await expect(runStartScript({ ...start(path), timeoutMs: 300 })).rejects.toThrow(
      "'scripts/start.sh start' failed (timed out after 300 ms)",
    );
    expect(runs()).toBe(1);
  });
});
