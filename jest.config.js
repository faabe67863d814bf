/** Jest in native ESM mode (NestJS 12 is ESM-only): ts-jest compiles, Node's VM modules load. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/lib', '<rootDir>/test', '<rootDir>/sample-app'],
  // .ts first: a stray compiled .js beside a source must never shadow it.
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  testMatch: ['**/*.spec.ts'],
  // A promise rejection nobody handles fails the test it surfaced in (issue 14, item 6).
  setupFilesAfterEnv: ['<rootDir>/test/support/fail-on-unhandled-rejection.ts'],
  moduleNameMapper: {
    '^nest-quorum-lock$': '<rootDir>/lib/index.ts',
    '^nest-quorum-lock/testing$': '<rootDir>/lib/testing/index.ts',
    '^nest-quorum-lock/postgres$': '<rootDir>/lib/fencing/postgres/index.ts',
    '^nest-quorum-lock/sql$': '<rootDir>/lib/fencing/sql/index.ts',
    '^nest-quorum-lock/terminus$': '<rootDir>/lib/terminus/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      { useESM: true, tsconfig: 'tsconfig.json', diagnostics: { ignoreCodes: [151002] } },
    ],
  },
  testTimeout: 60000,
};
