// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.cache/', 'bench/results/', '.stryker-tmp/', 'reports/'] },
  js.configs.recommended,
  // Type-aware: every linted .ts file is in tsconfig.json, which the project service finds.
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly' },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      // bigint/number loops on the hot path are written with explicit ++/--.
      'no-plusplus': 'off',
      // Offsets, counts and ids (numbers and bigints) in messages print as their decimal digits,
      // which is what a reader wants; anything else (undefined, objects) still needs String().
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // House style: a one-line arrow that calls a void function (`() => resolve()`,
      // `(error) => reject(error)`) reads as the call; a `return voidCall()` in a block still fails.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // Rejecting with what a catch caught passes it on, as `throw error` there does (which
      // only-throw-error allows by default); rejecting with a literal still fails.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  // The JavaScript config files (this one, stryker's, test support .mjs) are not in a tsconfig.
  { files: ['**/*.js', '**/*.mjs'], extends: [tseslint.configs.disableTypeChecked] },
  // TEMPORARY (second pass): vitest types its asymmetric matchers (expect.any,
  // expect.stringMatching, expect.objectContaining) as any, so using one inside an expected
  // value fails these three rules. Left: no-unsafe-assignment 25, no-unsafe-argument 2,
  // no-unsafe-return 1, all from those matchers in 11 files.
  {
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
