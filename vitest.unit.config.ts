import { defineConfig } from 'vitest/config';
import { setupFiles, timeouts, workers } from './vitest.config.js';

// `npm run test:unit`: the unit, component and property tests, without a broker (no global
// setup): they run on the embedded broker and PGlite. test/README.md says which test goes where.
export default defineConfig({
  test: {
    ...timeouts,
    ...workers,
    setupFiles,
    include: ['test/{unit,component,property}/**/*.test.ts'],
  },
});
