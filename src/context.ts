import type { SiblingWaits } from './waiting/sibling-waits';
import type { RecentContention } from './waiting/recent-contention';
import type { LockEvents, RedisErrorReport } from './events';
import type { FairWaiters } from './waiting/fair-waiters';
import type { HandoffWatches } from './waiting/handoff-watches';
import type { HoldBook } from './ownership/hold-book';
import type { Frame } from './ownership/owner';
import type { OwnerGates } from './ownership/owner-gates';
import type { Subscriber } from './waiting/pubsub/subscriber';
import type { RedisCalls } from './redis/redis-calls';
import type { RedisConnection } from './redis/connection';
import type { ClientRegistry } from './ownership/client-registry';
import type { ReconnectCounter } from './redis/reconnect-counter';
import type { ServerClock } from './redis/server-clock';
import type { PublishCommand } from './protocol/scripts';
import type { StepLimits } from './waiting/acquire-or-wait';
import type { Watchdog } from './leases/watchdog';

/** What a lock handle needs from the LockClient that made it. */
export interface LockContext {
  readonly redis: RedisConnection;
  /** Every command goes through it: budgets, readiness, errors naming the lock. */
  readonly calls: RedisCalls;
  readonly clientId: string;
  /** Lease of watchdog locks, in ms. */
  readonly watchdogTimeout: number;
  readonly book: HoldBook;
  /** How long a fair-lock waiter's place lives without a refresh, in ms. */
  readonly fairLockWaitTimeout: number;
  /** How long a fair lock's hand-off waits for its waiter to confirm it, in ms. */
  readonly fairLockHandoffTimeout: number;
  readonly fairWaiters: FairWaiters;
  /** The fair-lock hand-offs this client made, settled if their waiter never takes them up. */
  readonly handoffWatches: HandoffWatches;
  /** The getLock wake-ups this client's releases sent, passed on if their client never acts. */
  readonly lockWakeups: HandoffWatches;
  readonly watchdog: Watchdog;
  /** Aborts, with a ClientClosedError, when close() begins: no new acquisition starts, waits end. */
  readonly closing: AbortSignal;
  /** Aborts when close() is done: every call rejects from then on. */
  readonly closed: AbortSignal;
  /** Keeps each owner's branches apart inside the process (see OwnerGates). */
  readonly gates: OwnerGates;
  /** The locks this client saw contended a moment ago (see RecentContention). */
  readonly contention: RecentContention;
  /** An owner's waits asleep together on one lock, woken when one of them takes it. */
  readonly siblingWaits: SiblingWaits;
  /** Says which host and process this client's owner ids belong to (see ClientRegistry). */
  readonly registry: ClientRegistry;
  /** The ioredis keyPrefix of the connection ('' when none): Redis has every key under it. */
  readonly keyPrefix: string;
  /** Whether the connection is a Redis Cluster. */
  readonly cluster: boolean;
  /**
   * Counts a running withLock or withPermits body (its frame), for close() to wait for; call the
   * result when it is done. `giveBack` gives back what the body holds outside the hold book:
   * close() calls it when the body outlasts its timeout.
   */
  trackBody(body: Frame, giveBack?: () => Promise<unknown>): () => void;
  /** The client's pub/sub, ready within the limits (it may first ask a cluster what it supports). */
  subscriber(name: string, limits: StepLimits): Promise<Subscriber>;
  /** The client's pub/sub, if a wait opened it already. */
  openSubscriber(): Subscriber | undefined;
  reportRedisError(report: RedisErrorReport): void;
  /**
   * With waitForReplicas: how many replicas acknowledged the writes on `key` so far, and how many
   * must. Undefined without the option.
   */
  replicaAcks?(name: string, key: string): Promise<{ acknowledged: number; required: number }>;
  /**
   * How releases are announced: classic pub/sub, or the cluster's shard channels. The command
   * itself once known (after the client's first calls), a promise of it until then.
   */
  publishCommand(): PublishCommand | Promise<PublishCommand>;
  /** A request id unique to this client, for latches. */
  newRequestId(): string;
  /** Counts the connection's closes: an answer after one may come from a re-sent command. */
  readonly reconnects: ReconnectCounter;
  /** Redis' clock, in which requests' windows are written (see RequestWindow). */
  readonly clock: ServerClock;
  /** The client's acquired / notAcquired / released events. */
  readonly events: LockEvents;
}
