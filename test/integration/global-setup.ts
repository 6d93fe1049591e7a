/**
 * Vitest global setup: makes sure a RabbitMQ stream broker is there before any test runs.
 *
 * `RABBITMQ_STREAM_URL` names an existing broker; without it, `scripts/rabbitmq.sh start`
 * starts (and on the first run builds) the local one. Tests read the URL with
 * `inject('rabbitmqUrl')`; `process.env.RABBITMQ_STREAM_URL` is set as well, for child
 * processes such as the crash tests' aggregator.
 *
 * When no broker can be had this throws, so the run fails saying why: integration tests are
 * never silently skipped.
 *
 * The broker is left running after the tests: it starts in seconds but not instantly, and
 * several test runs (watch mode, parallel checkouts) share it, so one run stopping it would
 * break another. `scripts/rabbitmq.sh stop` stops it; CI calls that when it is done.
 */
import { execFile } from 'node:child_process';
import { connect as connectTcp } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    rabbitmqUrl: string;
  }
}

const script = fileURLToPath(new URL('../../scripts/rabbitmq.sh', import.meta.url));
// The first run builds the broker's root folder (about a minute) before starting it.
const startTimeoutMs = 600_000;
const probeTimeoutMs = 5_000;

export default async function setup(project: TestProject): Promise<void> {
  const url = process.env.RABBITMQ_STREAM_URL ?? (await startLocalBroker());
  await probe(url);
  process.env.RABBITMQ_STREAM_URL = url;
  project.provide('rabbitmqUrl', url);
}

async function startLocalBroker(): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(script, ['start'], { timeout: startTimeoutMs });
    const url = stdout.trim().split('\n').pop();
    if (!url) throw new Error('it printed no URL');
    return url;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(
      'integration tests need a RabbitMQ stream broker: RABBITMQ_STREAM_URL is not set and ' +
        `'scripts/rabbitmq.sh start' failed: ${stderr || (error as Error).message}`,
      { cause: error },
    );
  }
}

/** Fails fast, naming the URL, when nothing listens there (rather than every test timing out). */
async function probe(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  await new Promise<void>((resolve, reject) => {
    const socket = connectTcp({ host: hostname, port: Number(port || 5552) });
    const fail = (reason: string): void => {
      socket.destroy();
      reject(new Error(`integration tests need a RabbitMQ stream broker, but ${url} ${reason}`));
    };
    socket.setTimeout(probeTimeoutMs, () => fail(`did not answer within ${probeTimeoutMs} ms`));
    socket.once('error', (error) => fail(`refused the connection: ${error.message}`));
    socket.once('connect', () => {
      socket.end();
      resolve();
    });
  });
}
