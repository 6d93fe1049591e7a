import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokerCpu, notMeasured } from '../../../bench/broker-cpu.js';

/** A cache folder whose broker chroot is `root` and whose running broker answers on `port`. */
function cacheWith(root: string, port?: string): string {
  const cache = mkdtempSync(join(tmpdir(), 'broker-cpu-'));
  symlinkSync(root, join(cache, 'rabbitmq-trixie'));
  if (port !== undefined) writeFileSync(join(cache, 'rabbitmq.port'), `${port}\n`);
  return cache;
}

describe('bench broker CPU', () => {
  it('says why a remote broker is not measured rather than guess', () => {
    const broker = brokerCpu('rabbitmq-stream://guest:guest@rabbit.example:5552/', cacheWith('/'));
    expect(broker).toEqual({
      measured: false,
      reason: 'the broker at rabbit.example is not on this machine',
    });
    expect(notMeasured(broker)).toBe(
      'broker CPU: not measured (the broker at rabbit.example is not on this machine)',
    );
  });

  it('does not measure a local broker on another port than the one scripts/rabbitmq.sh runs', () => {
    const url = 'rabbitmq-stream://guest:guest@127.0.0.1:5561/';
    expect(notMeasured(brokerCpu(url, cacheWith('/', '5552')))).toBe(
      "broker CPU: not measured (port 5561 is not the one of scripts/rabbitmq.sh's broker (5552))",
    );
    expect(brokerCpu(url, cacheWith('/')).measured).toBe(false);
  });

  it('does not measure when no process runs in the chroot', () => {
    const empty = mkdtempSync(join(tmpdir(), 'broker-cpu-root-'));
    const broker = brokerCpu(
      'rabbitmq-stream://guest:guest@localhost:5552/',
      cacheWith(empty, '5552'),
    );
    expect(broker.measured).toBe(false);
  });

  it("sums the CPU of the chroot's untagged processes from /proc: this one's included", () => {
    // With '/' as the chroot every untagged process of the host counts as the broker's,
    // this test's process too: the sum grows at least by the CPU this process burns.
    const broker = brokerCpu(
      'rabbitmq-stream://guest:guest@127.0.0.1:5552/',
      cacheWith('/', '5552'),
    );
    if (!broker.measured) throw new Error(`not measured: ${broker.reason}`);
    expect(broker.pids).toContain(process.pid);
    const before = broker.cpuMs();
    const own = process.cpuUsage();
    let spin = 0;
    while (process.cpuUsage(own).user < 200_000) spin++;
    const ownMs = (process.cpuUsage(own).user + process.cpuUsage(own).system) / 1000;
    expect(spin).toBeGreaterThan(0);
    // /proc counts in 10 ms ticks: one tick of rounding per end.
    expect(broker.cpuMs() - before).toBeGreaterThanOrEqual(ownMs - 20);
  });

  it('counts a process that exits during a round at its last reading: the sum never falls', async () => {
    const child = spawn(process.execPath, [
      '-e',
      'const t = Date.now(); while (Date.now() - t < 400); setTimeout(() => {}, 300);',
    ]);
    try {
      await new Promise((resolve) => setTimeout(resolve, 350));
      const broker = brokerCpu(
        'rabbitmq-stream://guest:guest@127.0.0.1:5552/',
        cacheWith('/', '5552'),
      );
      if (!broker.measured) throw new Error(`not measured: ${broker.reason}`);
      expect(broker.pids).toContain(child.pid);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const whileRunning = broker.cpuMs();
      await once(child, 'exit');
      expect(broker.cpuMs()).toBeGreaterThanOrEqual(whileRunning);
    } finally {
      child.kill();
    }
  });
});
