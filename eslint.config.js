import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules',
      'dist',
      'sample-app/dist',
      'coverage',
      'build-check',
      'build-sim',
      'bench/dist',
      'lib/**/*.js',
      'test/.generated',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // One runtime per engine for time, timers and randomness (lib/core/runtime.ts, injected): the
    // deterministic simulation runs the real engine on virtual time, so nothing in the core may
    // reach the real clocks, timers or randomness past it.
    files: ['lib/core/**/*.ts'],
    ignores: ['lib/core/runtime.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        ...[
          'setTimeout',
          'setInterval',
          'setImmediate',
          'clearTimeout',
          'clearInterval',
          'clearImmediate',
          'queueMicrotask',
          'performance',
        ].map((name) => ({ name, message: `Use the engine's Runtime (lib/core/runtime.ts), not ${name}.` })),
      ],
      'no-restricted-properties': [
        'error',
        ...[
          ['Date', 'now'],
          ['performance', 'now'],
          ['Math', 'random'],
          ['process', 'nextTick'],
          ['process', 'hrtime'],
          ['crypto', 'randomBytes'],
          ['crypto', 'randomUUID'],
        ].map(([object, property]) => ({
          object,
          property,
          message: "Use the engine's Runtime (lib/core/runtime.ts).",
        })),
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: "Use the engine's Runtime (wallNow).",
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'node:timers', message: "Use the engine's Runtime." },
            { name: 'node:timers/promises', message: "Use the engine's Runtime." },
            {
              name: 'node:crypto',
              importNames: ['randomBytes', 'randomUUID', 'randomInt'],
              message: "Use the engine's Runtime.",
            },
            {
              name: 'rxjs',
              importNames: ['interval', 'timer', 'asyncScheduler', 'asapScheduler'],
              message: "Use the engine's Runtime.",
            },
          ],
        },
      ],
    },
  },
);
