import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'apps/web/dist/**', 'node_modules/**', 'libs/runtime/build/**', '.data/**', '.gpu/**', 'bench/results/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  {
    // the web app (apps/web) is TypeScript with JSX
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { ecmaFeatures: { jsx: true } } },
  },
  {
    // the web app's React components: hooks called unconditionally, effects list what they read
    files: ['apps/web/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'read configuration through loadConfig() (configs/), not process.env',
        },
      ],
    },
  },
  {
    files: ['configs/**', 'test/**', '**/*.spec.ts', 'libs/runtime/test-gpu/**', 'vitest.config.ts', 'apps/web/vite.config.ts', 'libs/runtime/src/bench/**', 'libs/runtime/bench/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // tests read loosely typed JSON bodies
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
