import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.parley/**', 'coverage/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      // Writes and publishes belong in actions/ (house style); console is for the CLI only.
      'no-console': 'error',
    },
  },
  {
    files: [
      'apps/api/src/cli/**',
      'apps/standalone/src/**',
      'scripts/**',
      'packages/*/scripts/**',
      'bench/**',
      'packages/devservices/src/**',
    ],
    rules: { 'no-console': 'off' },
  },
  {
    // Type-aware: a promise nobody awaits loses its error (an unhandled rejection ends the
    // process) and its ordering.
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  // Layers (house style): routes → actions → lib → presenters and packages. Routes parse,
  // call one action or read and present; they never query the database themselves.
  {
    files: ['apps/api/src/routes/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@parley/db',
              importNames: [
                'getPrisma',
                'getPool',
                'query',
                'statement',
                'Prisma',
                'idsByLowerEquals',
              ],
              message:
                'Routes do not query the database: put the read in lib/ or the write in actions/.',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          // ctx.tx.user.findMany(...), tx.$queryRaw`...`: passing ctx.tx to an action is fine.
          selector:
            "MemberExpression[object.property.name='tx'], MemberExpression[object.name='tx']",
          message:
            'Routes do not query the database: put the read in lib/ or the write in actions/.',
        },
      ],
    },
  },
  {
    files: ['apps/api/src/lib/**', 'apps/api/src/presenters/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/actions/*', '**/routes/*'],
              message:
                'lib/ and presenters/ are below actions and routes: move what both need down.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['apps/api/src/actions/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/routes/*'], message: 'Actions do not depend on routes.' }] },
      ],
    },
  },
  {
    files: ['**/*.test.ts', 'apps/*/test/**'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
