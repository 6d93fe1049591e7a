// The npm start demo, end to end, on both brokers: it must finish and show every closed
// window exactly once despite its two crashes.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';

const run = (env: Record<string, string>) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/sensors.ts'], {
    env: { ...process.env, ...env },
  });

describe('the demo', () => {
  it.each([
    ['the embedded broker', {}],
    ['RabbitMQ', { STREAM_WINDOWS_BROKER: 'rabbitmq', RABBITMQ_STREAM_URL: inject('rabbitmqUrl') }],
  ])('should show five windows once each after two crashes on %s', async (_name, env) => {
    const { stdout } = await run(env);
    expect(stdout).toContain('run 1: crashed after publish 3');
    expect(stdout).toContain('run 2: crashed before publish 2');
    expect(stdout.match(/^\d\d:\d\d-\d\d:\d\d /gm)).toEqual([
      '12:00-12:01 ',
      '12:01-12:02 ',
      '12:02-12:03 ',
      '12:03-12:04 ',
      '12:04-12:05 ',
    ]);
    expect(stdout).toContain('5 windows, each exactly once, despite 2 crashes.');
  });
});
