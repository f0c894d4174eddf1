/**
 * The bench's own tests, in ESM mode like the library's (ts-jest with useESM). They import the
 * library through its package entries, i.e. the root's build (dist/src): `npm run build` first.
 * The Valkey ones read ECHOMQ_TEST_URL, which `npm test` sets through the root's with-valkey.
 */
export default {
  rootDir: '.',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  testTimeout: 30000,
};
