// Lint with the recommended rules of typescript-eslint, and the allowed direction of imports
// between the project's parts (scripts/lint/boundaries.js), so that `npm run lint` fails when a
// part reaches back up.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { boundariesPlugin } from './scripts/lint/boundaries.js';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'collector/ui/vendor/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },

  {
    files: ['**/*.ts'],
    plugins: { boundaries: boundariesPlugin },
    rules: { 'boundaries/imports': 'error' },
  },
  {
    files: ['**/*.mjs', '**/*.js', 'collector/ui/**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        document: 'readonly',
        window: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
        requestAnimationFrame: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        performance: 'readonly',
        devicePixelRatio: 'readonly',
      },
    },
  },
);
