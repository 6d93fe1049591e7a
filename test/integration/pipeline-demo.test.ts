// The npm run pipeline example, end to end, on both brokers: it must finish and show every
// closed hour once with all three sensors' readings, despite a crash in each stage.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';

const run = (env: Record<string, string>) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/pipeline.ts'], {
    env: { ...process.env, ...env },
  });

describe('the pipeline example', () => {
  it.each([
    ['the embedded broker', {}],
    ['RabbitMQ', { STREAM_WINDOWS_BROKER: 'rabbitmq', RABBITMQ_STREAM_URL: inject('rabbitmqUrl') }],
  ])(
    'should show three hours once each with 540 readings after a crash in each stage on %s',
    async (_name, env) => {
      const { stdout } = await run(env);
      expect(stdout).toContain('run 1, stage 1: crashed after-publish 70; restarting');
      expect(stdout).toContain('run 2, stage 2: crashed after-publish 1; restarting');
      expect(stdout.match(/^\d\d:\d\d-\d\d:\d\d .*$/gm)).toEqual([
        '00:00-01:00        60  540',
        '01:00-02:00        60  540',
        '02:00-03:00        60  540',
      ]);
      expect(stdout).toContain('3 hours, each exactly once, despite a crash in each stage.');
    },
  );
});
