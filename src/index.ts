export { LockClient } from './client';
export type { CloseOptions, LockClientOptions, LockLostEvent, RedisErrorEvent, TaskOptions } from './client';
export type { LockLostCode } from './errors';
export {
  ClientClosedError,
  LockLostError,
  LockNotHeldError,
  LockNotReplicatedError,
  LockTimeoutError,
  RedisReplyError,
  RedisUnavailableError,
  RLockError,
} from './errors';
export type {
  FencedHeld,
  Held,
  LockOptions,
  RFencedLock,
  RLock,
  TryLockOptions,
  WithLockOptions,
} from './locks/types';
export type { ReadWriteLockOptions, RReadWriteLock } from './locks/read-write-lock';
export type { SpinLockOptions } from './locks/spin-lock';
export type { PubSubOption } from './pubsub-mode';
export type { RedisConnection } from './redis';
export type { ReplicaWait } from './replicas';
