export { LockClient } from './client';
export type { LockClientOptions, LockLostEvent } from './client';
export { ClientClosedError, LockNotHeldError, LockTimeoutError, RLockError } from './errors';
export type { Held, LockOptions, RFencedLock, RLock, TryLockOptions, WithLockOptions } from './locks/types';
export type { RedisConnection } from './redis';
