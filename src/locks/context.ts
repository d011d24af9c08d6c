import type { FairWaiters } from '../fair-waiters';
import type { HoldBook } from '../holds';
import type { Subscriber } from '../pubsub';
import type { RedisConnection } from '../redis';
import type { PublishCommand } from '../scripts';
import type { Watchdog } from '../watchdog';

/** What a lock handle needs from the LockClient that made it. */
export interface LockContext {
  readonly redis: RedisConnection;
  readonly clientId: string;
  /** Lease of watchdog locks, in ms. */
  readonly watchdogTimeout: number;
  readonly book: HoldBook;
  /** How long a fair-lock waiter's place lives without a refresh, in ms. */
  readonly fairLockWaitTimeout: number;
  readonly fairWaiters: FairWaiters;
  readonly watchdog: Watchdog;
  /** Aborts, with a ClientClosedError, when the client closes. */
  readonly closing: AbortSignal;
  subscriber(): Promise<Subscriber>;
  /**
   * With waitForReplicas: how many replicas acknowledged the writes on `key` so far, and how many
   * must. Undefined without the option.
   */
  replicaAcks?(key: string): Promise<{ acknowledged: number; required: number }>;
  /** How releases are announced: classic pub/sub, or the cluster's shard channels. */
  publishCommand(): Promise<PublishCommand>;
  /** A request id unique to this client, for latches. */
  newRequestId(): string;
}
