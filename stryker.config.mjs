// @ts-check
// `npm run mutate`: mutation testing of the window and engine code with the unit, component
// and property tests (no broker). Not part of CI: it is CPU-heavy. The property tests run fewer
// cases under a fixed seed, so every mutant meets the same cases and their coverage floors stay
// met.
process.env.PROPERTY_RUNS ??= '15';
process.env.PROPERTY_SEED ??= '7';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.unit.config.ts' },
  mutate: [
    'src/{api,dsl,engine,partitioning,ports,producer,result-format,windows}/**/*.ts',
    '!src/**/index.ts',
  ],
  coverageAnalysis: 'perTest',
  checkers: [],
  concurrency: 2,
  // A mutant that loops forever costs this much over the run's usual time.
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
