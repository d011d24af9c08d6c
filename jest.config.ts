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
  'locks/reentrant-lock',
  'ownership/ownership',
  'ownership/branches',
  'waiting/waiting',
  'leases/watchdog',
  'locks/fair-lock',
  'locks/fair-places',
  'locks/fenced-lock',
  'locks/processes',
  'locks/fair-processes',
  'synchronizers/semaphore',
  'synchronizers/permit-expirable-semaphore',
  'synchronizers/count-down-latch',
  'synchronizers/synchronizer-processes',
  'locks/read-write-lock',
  'locks/read-write-processes',
  'locks/spin-lock',
  'redis/ioredis-options',
].map((file) => `<rootDir>/__tests__/${file}.test.ts`);

/**
 * The test files rerun on ioredis 6 (the other major of the peer range): locks, the fair lock,
 * waiting, the watchdog, synchronizers, the ioredis options services set, and the faults of a
 * killed, restarted and paused (SIGSTOP) server and of killed connections. The rest runs on
 * ioredis 5 only, to keep the whole run short (faults/budgets.test.ts alone takes 100 s).
 */
const ON_IOREDIS_6 = [
  '__tests__/redis/ioredis-major.test.ts',
  '__tests__/locks/reentrant-lock.test.ts',
  '__tests__/locks/fair-lock.test.ts',
  '__tests__/waiting/waiting.test.ts',
  '__tests__/leases/watchdog.test.ts',
  '__tests__/synchronizers/semaphore.test.ts',
  '__tests__/synchronizers/count-down-latch.test.ts',
  '__tests__/redis/ioredis-options.test.ts',
  '__tests__/faults/server.test.ts',
  '__tests__/faults/connections.test.ts',
  '__tests__/faults/synchronizer-budgets.test.ts',
].map((file) => `<rootDir>/${file}`);

const config: Config = {
  projects: [
    {
      ...common,
      displayName: 'standalone',
      // The files at the root of __tests__ and those of the folders that mirror src/; cluster/ and
      // faults/ run apart (the cluster project, npm run test:faults).
      testMatch: [
        '<rootDir>/__tests__/*.test.ts',
        '<rootDir>/__tests__/{client,leases,locks,otel,ownership,protocol,redis,synchronizers,waiting}/*.test.ts',
      ],
    },
    {
      ...common,
      displayName: 'cluster',
      // The same files on a 3-master Redis Cluster, plus what only a cluster has.
      testMatch: [...PORTABLE, '<rootDir>/__tests__/cluster/*.test.ts'],
      setupFiles: ['<rootDir>/__tests__/helpers/cluster-deployment.ts'],
    },
    {
      ...common,
      displayName: 'ioredis-6',
      testMatch: ON_IOREDIS_6,
      // Every `import ... from 'ioredis'`, the library's and the tests', loads ioredis 6 (installed
      // as the devDependency alias ioredis-6); worker processes are told the same (helpers/workers.ts).
      moduleNameMapper: { ...common.moduleNameMapper, '^ioredis$': 'ioredis-6' },
      setupFiles: ['<rootDir>/__tests__/helpers/ioredis-6-deployment.ts'],
    },
  ],
  // Builds src/protocol/lua.generated.ts from lua/, so that a run of one file tests the scripts as they are.
  globalSetup: '<rootDir>/__tests__/helpers/global-setup.ts',
  // Every file starts its own Redis; timing-sensitive suites should not fight for two cores.
  maxWorkers: 2,
  testTimeout: 30_000,
};

export default config;
