/** Jest in ESM mode (NestJS 12 is ESM-only): ts-jest with useESM, one Valkey per run. */
export default {
  rootDir: '.',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  moduleNameMapper: {
    '^@echomq/nestjs$': '<rootDir>/src/index.ts',
    '^@echomq/nestjs/(protocol|testing|unstable)$': '<rootDir>/src/$1.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  testTimeout: 30000,
};
