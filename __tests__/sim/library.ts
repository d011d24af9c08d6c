/**
 * The one door from the simulation to the library: the simulated globals first (the library binds
 * some of them when it loads), then the library's public surface. When the library's files move,
 * this is the file to change.
 */
import './world/globals';

export { LockClient } from '../../src/index';
export type {
  LockClientOptions,
  RCountDownLatch,
  RFencedLock,
  RLock,
  RPermitExpirableSemaphore,
  RReadWriteLock,
  RSemaphore,
} from '../../src/index';

// Key names of Redis' layout, which the checks read (the same layout a Redisson client reads).
export { fairLockKeys, fencingTokenKey, readWriteLockKeys } from '../../src/protocol/keys';

// The budget timers of a client's calls: patched (never the shipped file) by one deliberate bug
// of __tests__/sim/mutants.ts.
export { Deadlines } from '../../src/redis/deadlines';

// The scripts as built, to name them in the agreement test's figures.
export { LUA_SCRIPTS } from '../../src/protocol/lua.generated';
