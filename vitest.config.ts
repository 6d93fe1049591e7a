import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Starts (or finds, via RABBITMQ_STREAM_URL) the RabbitMQ broker the integration tests use.
    globalSetup: ['test/integration/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Two cores: integration tests share one broker and are heavy; keep workers bounded.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
