import { defineConfig } from 'vitest/config';
import { timeouts, workers } from './vitest.config.js';

// `npm run test:unit`: the unit and property tests, without a broker (no global setup).
export default defineConfig({
  test: {
    ...timeouts,
    ...workers,
    include: ['test/unit/**/*.test.ts', 'test/property/**/*.test.ts'],
  },
});
