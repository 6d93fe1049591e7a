import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { bound } from '../../support/timing.js';

const child = fileURLToPath(new URL('./chunk-retention-child.ts', import.meta.url));

describe('the memory a running job holds', () => {
  it(
    'should keep no chunk it processed reachable while a result awaits its confirm',
    async () => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', child],
        { timeout: bound(60_000) },
      );
      const { chunks, reachable } = JSON.parse(stdout) as { chunks: number; reachable: number };
      expect(chunks).toBe(400);
      // A few may wait in the microtask queue or the step processor; not the 400 a race kept.
      expect(reachable).toBeLessThan(10);
    },
    bound(60_000),
  );
});
