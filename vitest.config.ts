import { configDefaults, defineConfig } from 'vitest/config';
import { bound } from './test/support/timing.js';

/** The timeouts of every test project (and of vitest.unit.config.ts), scaled by TEST_TIME_SCALE. */
export const timeouts = { testTimeout: bound(120_000), hookTimeout: bound(180_000) };
/** Two cores: integration tests share one broker and are heavy; keep workers bounded. */
export const workers = { maxWorkers: 2, minWorkers: 1 };
/** Run in every test file: names a test that holds its worker's event loop (see the file). */
export const setupFiles = ['test/support/event-loop-watch.ts'];

export default defineConfig({
  test: {
    // Starts (or finds, via RABBITMQ_STREAM_URL and RABBITMQ_CLUSTER_URLS) the RabbitMQ broker
    // and the 3-node cluster the integration tests use. The root's global setup runs once and
    // what it provides reaches every project.
    globalSetup: ['test/integration/global-setup.ts'],
    ...workers,
    projects: [
      {
        test: {
          ...timeouts,
          setupFiles,
          name: 'tests',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/cluster/**'],
        },
      },
      {
        // Cluster tests stop and start nodes, so two of them must never run at once: one
        // thread runs their files one after another (singleThread), in the threads pool so
        // that they run beside the other tests' forks instead of after them.
        test: {
          ...timeouts,
          setupFiles,
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          pool: 'threads',
          poolOptions: { threads: { singleThread: true } },
        },
      },
    ],
  },
});
