import type { Config } from 'jest';

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/__tests__'],
  testMatch: ['**/*.test.ts'],
  // The fault-injection suite runs on its own: npm run test:faults.
  testPathIgnorePatterns: ['/node_modules/', '/__tests__/faults/'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  // Every file starts its own redis-server; timing-sensitive suites should not fight for two cores.
  maxWorkers: 2,
  testTimeout: 30_000,
  slowTestThreshold: 10,
};

export default config;
