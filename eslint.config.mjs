import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.parley/**', 'coverage/**'] },
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
    files: ['**/*.test.ts', 'apps/*/test/**'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
