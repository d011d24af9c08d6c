import type { Config } from 'jest';

const common: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/__tests__'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  // examples/ import the package by its name, as users do; here that is the source (tsconfig paths
  // does the same for tsc and tsx).
  moduleNameMapper: { '^rlock$': '<rootDir>/src' },
  slowTestThreshold: 10,
};

/** The test files whose behaviour must hold on every deployment; the cluster project reruns them. */
const PORTABLE = [
  'lock',
  'ownership',
  'branches',
  'waiting',
  'watchdog',
  'fair-lock',
  'fair-places',
  'fenced-lock',
  'processes',
  'fair-processes',
  'semaphore',
  'permit-expirable-semaphore',
  'count-down-latch',
  'synchronizer-processes',
  'read-write-lock',
  'read-write-processes',
  'spin-lock',
  'ioredis-options',
].map((file) => `<rootDir>/__tests__/${file}.test.ts`);

const config: Config = {
  projects: [
    {
      ...common,
      displayName: 'standalone',
      testMatch: ['<rootDir>/__tests__/*.test.ts'],
    },
    {
      ...common,
      displayName: 'cluster',
      // The same files on a 3-master Redis Cluster, plus what only a cluster has.
      testMatch: [...PORTABLE, '<rootDir>/__tests__/cluster/*.test.ts'],
      setupFiles: ['<rootDir>/__tests__/helpers/cluster-deployment.ts'],
    },
  ],
  // Builds src/lua.generated.ts from lua/, so that a run of one file tests the scripts as they are.
  globalSetup: '<rootDir>/__tests__/helpers/global-setup.ts',
  // Every file starts its own Redis; timing-sensitive suites should not fight for two cores.
  maxWorkers: 2,
  testTimeout: 30_000,
};

export default config;
