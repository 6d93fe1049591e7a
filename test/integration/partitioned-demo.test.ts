// The npm run partitioned example, end to end on the embedded broker: it must finish and show
// every closed minute once with every partition's readings, despite a crash in each stage.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('the partitioned example', () => {
  it('shows thirty minutes once each, summed over three partitions, after a crash in each stage', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'examples/partitioned.ts'],
      { env: { ...process.env, STREAM_WINDOWS_BROKER: '' } },
    );
    expect(stdout).toContain('minute 12, stage 1: crashed after a publish, before its confirm');
    expect(stdout).toContain('minute 20, stage 2: crashed after a publish, before its confirm');
    const minutes = stdout.match(/^\d\d:\d\d-\d\d:\d\d .*$/gm) ?? [];
    expect(minutes).toEqual(
      Array.from({ length: 30 }, (_, m) => {
        const at = (minute: number) => `00:${String(minute).padStart(2, '0')}`;
        return `${at(m)}-${at(m + 1)}            3  18`;
      }),
    );
    expect(stdout).toContain(
      '30 minutes, each exactly once and right, despite a crash in each stage.',
    );
  });
});
