// The npm run partitioned example, end to end on the embedded broker: it must finish and show
// every minute stage 1 closed once, whole (every partition's readings), although partition 1
// is ten minutes behind the others and each stage crashes once.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('the partitioned example', () => {
  it('shows thirty-one minutes once each, summed over three partitions, after a crash in each stage', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'examples/partitioned.ts'],
      { env: { ...process.env, STREAM_WINDOWS_BROKER: '' } },
    );
    expect(stdout).toContain('stage 1: crashed after a publish, before its confirm; restarting');
    expect(stdout).toContain('stage 2: crashed after a publish, before its confirm; restarting');
    const minutes = [...stdout.matchAll(/^(\d\d:\d\d-\d\d:\d\d) +(\d+) +(\d+) +\d+$/gm)];
    const at = (minute: number) => `00:${String(minute).padStart(2, '0')}`;
    expect(
      minutes.map(([, minute, partitions, readings]) => [minute, partitions, readings]),
    ).toEqual(Array.from({ length: 31 }, (_, m) => [`${at(m)}-${at(m + 1)}`, '3', '18']));
    expect(stdout).toContain(
      '31 minutes, each exactly once and whole, despite a crash in each stage.',
    );
  });
});
