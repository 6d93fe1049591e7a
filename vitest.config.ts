import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Two cores: integration tests share one broker and are heavy; keep workers bounded.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
