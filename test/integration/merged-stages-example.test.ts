// The npm run merged-stages example, end to end on the embedded broker: stage 2 over the result
// streams of stage 1 per partition must total every minute exactly once, although one
// partition's readings come after stage 2 first ran.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('the merged-stages example', () => {
  it('totals ten minutes over three partitions, none before the late partition came', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'examples/merged-stages.ts'],
      { env: { ...process.env, STREAM_WINDOWS_BROKER: '' } },
    );
    expect(stdout).toContain("stage 2 without partition 1's results: 0 minutes totalled");
    const minutes = [...stdout.matchAll(/^(\d\d:\d\d) +(\d+)$/gm)];
    expect(minutes.map(([, minute, total]) => [minute, total])).toEqual(
      Array.from({ length: 10 }, (_, m) => [`00:0${m}`, '36']),
    );
    expect(stdout).toContain("10 minutes, each 36: every partition's readings, once.");
  });
});
