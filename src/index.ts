export { LockClient } from './client';
export type { LockClientOptions, LockLostEvent, RedisErrorEvent } from './client';
export {
  ClientClosedError,
  LockNotHeldError,
  LockNotReplicatedError,
  LockTimeoutError,
  RedisReplyError,
  RedisUnavailableError,
  RLockError,
} from './errors';
export type { Held, LockOptions, RFencedLock, RLock, TryLockOptions, WithLockOptions } from './locks/types';
export type { PubSubOption } from './pubsub-mode';
export type { RedisConnection } from './redis';
export type { ReplicaWait } from './replicas';
