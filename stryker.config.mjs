// @ts-check
// `npm run mutate`: mutation testing of the code that carries the guarantee (windows, engine,
// sink, codecs, adapters) with the unit, component and property tests (no broker). Not part of
// CI: it is CPU-heavy; `--mutate 'src/sink/**/*.ts'` runs one folder (CONTRIBUTING.md). The
// property tests run fewer cases under a fixed seed, so every mutant meets the same cases (their
// coverage floors demand only what 15 runs can promise).
process.env.PROPERTY_RUNS ??= '15';
process.env.PROPERTY_SEED ??= '7';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  // The tests of vitest.unit.config.ts, or only those of MUTATE_TESTS (vitest.mutate.config.ts).
  vitest: { configFile: 'vitest.mutate.config.ts' },
  mutate: [
    'src/{api,codecs,dsl,engine,memory,partitioning,ports,producer,rabbitmq,result-format,sink,windows}/**/*.ts',
    '!src/**/index.ts',
  ],
  coverageAnalysis: 'perTest',
  checkers: [],
  concurrency: 2,
  // A mutant that loops forever costs this much over the run's usual time.
  timeoutMS: 10_000,
  // The initial run is every unit, component and property test once: on two busy cores it
  // takes longer than Stryker's default 5 minutes.
  dryRunTimeoutMinutes: 60,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
