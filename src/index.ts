export { LockClient } from './client/lock-client';
export type { CloseOptions, LockClientOptions, TaskOptions } from './client/lock-client';
export type {
  AcquiredEvent,
  LockClientEventName,
  LockClientEvents,
  LockKind,
  LockLostEvent,
  NotAcquiredEvent,
  NotAcquiredReason,
  ReleasedEvent,
  RedisErrorEvent,
} from './events';
export type { LockLostCode } from './errors';
export {
  ClientClosedError,
  LockLostError,
  LockNotHeldError,
  LockNotReplicatedError,
  LockTimeoutError,
  PermitNotHeldError,
  RedisReplyError,
  RedisUnavailableError,
  RLockError,
} from './errors';
export type {
  FencedHeld,
  Held,
  LockHold,
  LockOptions,
  RFencedLock,
  RLock,
  TryLockOptions,
  WithLockOptions,
} from './locks/types';
export type { ReadWriteLockOptions, RReadWriteLock } from './locks/read-write-lock';
export type { SpinLockOptions } from './locks/spin-lock';
export type { PubSubOption } from './waiting/pubsub/mode';
export type { RedisConnection } from './redis/connection';
export type { ReplicaWait } from './redis/replicas';
export type {
  PermitsHeld,
  PermitWaitOptions,
  RCountDownLatch,
  RPermitExpirableSemaphore,
  RSemaphore,
} from './synchronizers/types';
