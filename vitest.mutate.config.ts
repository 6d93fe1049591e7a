import { defineConfig } from 'vitest/config';
import unit from './vitest.unit.config.js';

// `npm run mutate` over one folder: the broker-free tests of vitest.unit.config.ts narrowed to
// the globs of MUTATE_TESTS (comma-separated), so that Stryker's initial run and each mutant's
// run are only the tests that check that folder (CONTRIBUTING.md, "Mutation tests").
const globs = process.env.MUTATE_TESTS?.split(',').filter((glob) => glob !== '');

export default defineConfig({
  test: {
    ...unit.test,
    include: globs ?? unit.test?.include,
  },
});
