import { randomUUID } from 'node:crypto';
import { EventEmitter, setMaxListeners } from 'node:events';
import { ClientClosedError } from './errors';
import { FairWaiters } from './fair-waiters';
import { HoldBook, type LostLease } from './holds';
import { clientChannel } from './keys';
import type { LockContext, RedisErrorReport } from './locks/context';
import { FairLock } from './locks/fair-lock';
import { FencedLock } from './locks/fenced-lock';
import { GroupLock, type GroupRules } from './locks/group-lock';
import { ReentrantLock } from './locks/lock';
import type { RFencedLock, RLock } from './locks/types';
import { runAsNewTask } from './owner';
import { Subscriber } from './pubsub';
import {
  openLink,
  publishCommandOf,
  PUBSUB_OPTIONS,
  resolvePubSubMode,
  type PubSubMode,
  type PubSubOption,
} from './pubsub-mode';
import { isCluster, type RedisConnection } from './redis';
import { RedisCalls } from './redis-call';
import { acknowledgedBy, type ReplicaWait } from './replicas';
import type { PublishCommand } from './scripts';
import { checkTime } from './validate';
import type { StepLimits } from './wait';
import { Watchdog } from './watchdog';

export interface LockClientOptions {
  /** Lease of locks taken without leaseTime, in ms; renewed every third of it. Default 30 000. */
  watchdogTimeout?: number;
  /** Most locks (or fair-lock places) renewed by one script call. Default 100. */
  watchdogBatchSize?: number;
  /**
   * How long a fair-lock waiter keeps its place without a refresh, in ms. Live waiters are
   * refreshed every third of it, so this bounds only how long a dead waiter holds up the queue.
   * Default 10 000.
   */
  fairLockWaitTimeout?: number;
  /** The first half of every owner id this client writes. Default: a random UUID. */
  clientId?: string;
  /**
   * A connection for pub/sub, used for nothing else. Default: a duplicate of the command
   * connection, opened on the first wait and closed by close(). Not for a Cluster, where rlock
   * opens the connections to the nodes it needs.
   */
  subscriber?: RedisConnection;
  /**
   * How releases are announced: 'sharded' (SPUBLISH / SSUBSCRIBE on the shard that holds the
   * lock), 'classic' (PUBLISH / SUBSCRIBE), or 'auto': sharded on a Cluster whose servers have it
   * (Redis 7), classic otherwise, as Redisson chooses. Every service sharing locks must announce
   * the same way. Default 'auto'.
   */
  pubSub?: PubSubOption;
  /**
   * After each acquisition and release, WAIT until this many replicas acknowledged it (at most
   * `timeout` ms, default 1000), as Redisson's checkLockSyncedSlaves. Fewer is a
   * LockNotReplicatedError: an acquisition is given back first. Off by default.
   */
  waitForReplicas?: ReplicaWait;
  /**
   * How long one Redis call may take before the caller gets a RedisUnavailableError, in ms,
   * whatever the server does (slow, paused, unreachable). Calls inside a wait are bounded by the
   * time left of the wait instead, when that is shorter. Default 3000 (Redisson's `timeout`).
   */
  commandTimeout?: number;
}

/** Emitted when a lease this client held is gone while it was still held. */
export interface LockLostEvent {
  name: string;
  /** The owner that held it: `<clientId>:<ownerNumber>`. */
  ownerId: string;
  reason: string;
}

/**
 * Redis failed, or did not answer in time, something rlock goes on with by itself: a watchdog
 * renewal, a fair-lock place refresh, a subscription, a hand-off confirmation, or an attempt of a
 * wait that rides out the outage (`lock()` waits until Redis is back). The call that needs the
 * answer still gets its own error; this event makes an outage visible while nothing fails yet.
 */
export interface RedisErrorEvent {
  /** The lock, or for a subscription its channel. */
  name: string;
  /** What failed: 'acquire', 'renew', 'refresh', 'subscribe', 'confirm', ... */
  operation: string;
  error: Error;
  /** When it is tried again, in ms; absent when it is not. */
  retryInMs?: number;
}

interface LockClientEvents {
  lockLost: [LockLostEvent];
  redisError: [RedisErrorEvent];
}

/** A command connection that may also open its own pub/sub connection. */
type CommandConnection = RedisConnection & { duplicate?: () => RedisConnection };

const DEFAULT_WATCHDOG_TIMEOUT = 30_000;
const DEFAULT_WATCHDOG_BATCH = 100;
const DEFAULT_FAIR_WAIT_TIMEOUT = 10_000;
const DEFAULT_COMMAND_TIMEOUT = 3_000;

/**
 * Makes locks on one Redis connection. The connection stays the caller's (close() leaves it open);
 * the client adds one pub/sub connection for waiting and one timer for the watchdog.
 */
export class LockClient extends EventEmitter<LockClientEvents> {
  /** The client id in every owner id this client writes (Redisson's connection-manager id). */
  readonly id: string;
  readonly watchdogTimeout: number;
  readonly fairLockWaitTimeout: number;
  private readonly fairWaiters = new FairWaiters();
  private readonly redis: CommandConnection;
  private readonly book: HoldBook;
  private readonly watchdog: Watchdog;
  private readonly closer = new AbortController();
  private subscriberInstance?: Subscriber;
  private readonly subscriberOption?: RedisConnection;
  private readonly pubSubOption: PubSubOption;
  /** Settles once the pub/sub mode is known (on a cluster, after asking the servers). */
  private pubSubModeResolution?: Promise<PubSubMode>;
  private requestCount = 0;
  private readonly context: LockContext;
  private readonly calls: RedisCalls;

  constructor(redis: CommandConnection, options: LockClientOptions = {}) {
    super();
    if (redis === null || typeof redis !== 'object' || typeof redis.defineCommand !== 'function') {
      throw Object.assign(new TypeError('redis must be an ioredis-compatible client (Redis, Cluster, ...)'), {
        code: 'ERR_INVALID_ARG_TYPE',
      });
    }
    if (options === null || typeof options !== 'object') {
      throw Object.assign(new TypeError('options must be an object'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    this.redis = redis;
    // Every pending wait listens for the close; thousands of them are normal, not a leak.
    setMaxListeners(0, this.closer.signal);
    this.watchdogTimeout =
      options.watchdogTimeout === undefined
        ? DEFAULT_WATCHDOG_TIMEOUT
        : checkTime('watchdogTimeout', options.watchdogTimeout, { min: 100, allowMinusOne: false });
    this.fairLockWaitTimeout =
      options.fairLockWaitTimeout === undefined
        ? DEFAULT_FAIR_WAIT_TIMEOUT
        : checkTime('fairLockWaitTimeout', options.fairLockWaitTimeout, { min: 100, allowMinusOne: false });
    const batchSize =
      options.watchdogBatchSize === undefined
        ? DEFAULT_WATCHDOG_BATCH
        : checkTime('watchdogBatchSize', options.watchdogBatchSize, { min: 1, allowMinusOne: false });
    if (options.clientId !== undefined && (typeof options.clientId !== 'string' || options.clientId === '')) {
      throw Object.assign(new TypeError('clientId must be a non-empty string'), {
        code: 'ERR_INVALID_ARG_TYPE',
      });
    }
    this.id = options.clientId ?? randomUUID();
    this.subscriberOption = options.subscriber;
    this.pubSubOption = options.pubSub ?? 'auto';
    if (!PUBSUB_OPTIONS.includes(this.pubSubOption)) {
      throw Object.assign(new RangeError(`pubSub must be one of ${PUBSUB_OPTIONS.join(', ')}`), {
        code: 'ERR_OUT_OF_RANGE',
      });
    }
    if (this.subscriberOption && isCluster(redis)) {
      throw Object.assign(
        new TypeError(
          'options.subscriber cannot be used with a Cluster: rlock connects to the nodes it needs',
        ),
        { code: 'ERR_INVALID_ARG_TYPE' },
      );
    }
    if (!this.subscriberOption && !isCluster(redis) && typeof redis.duplicate !== 'function') {
      throw Object.assign(
        new TypeError('options.subscriber is required when the redis client has no duplicate() method'),
        { code: 'ERR_INVALID_ARG_TYPE' },
      );
    }
    const commandTimeout =
      options.commandTimeout === undefined
        ? DEFAULT_COMMAND_TIMEOUT
        : checkTime('commandTimeout', options.commandTimeout, { min: 1, allowMinusOne: false });
    this.calls = new RedisCalls(redis, commandTimeout);
    this.book = new HoldBook((lost: LostLease) => this.emit('lockLost', lost));
    this.watchdog = new Watchdog(this.calls, redis, this.book, this.fairWaiters, {
      timeout: this.watchdogTimeout,
      waiterTimeout: this.fairLockWaitTimeout,
      batchSize,
      groupBySlot: isCluster(redis),
      publishCommand: () => this.publishCommand(),
      report: (report) => this.reportRedisError(report),
    });
    const replicaWait = parseReplicaWait(options.waitForReplicas);
    this.context = {
      redis,
      calls: this.calls,
      clientId: this.id,
      watchdogTimeout: this.watchdogTimeout,
      book: this.book,
      fairLockWaitTimeout: this.fairLockWaitTimeout,
      fairWaiters: this.fairWaiters,
      watchdog: this.watchdog,
      closing: this.closer.signal,
      subscriber: (name, limits) => this.subscriber(name, limits),
      reportRedisError: (report) => this.reportRedisError(report),
      publishCommand: () => this.publishCommand(),
      replicaAcks:
        replicaWait &&
        (async (name, key) => ({
          // WAIT blocks up to its own timeout: the call's budget starts after that.
          acknowledged: await this.calls.run(
            name,
            'waitForReplicas',
            () => acknowledgedBy(redis, key, replicaWait.replicas, replicaWait.timeout),
            { budget: replicaWait.timeout + commandTimeout },
          ),
          required: replicaWait.replicas,
        })),
      newRequestId: () => `${this.id}:${(this.requestCount += 1)}`,
    };
  }

  /** A reentrant, non-fair lock (Redisson getLock). Handles are cheap; make one per use. */
  getLock(name: string): RLock {
    this.throwIfClosed();
    return new ReentrantLock(this.context, name);
  }

  /**
   * A reentrant lock whose waiters acquire in the order they reached Redis, across processes
   * (Redisson getFairLock). Same API, ownership and re-entry rules as getLock.
   */
  getFairLock(name: string): RLock {
    this.throwIfClosed();
    return new FairLock(this.context, name);
  }

  /**
   * A reentrant lock whose every acquisition (re-entries too) carries a fencing token larger than
   * all before it, for stores that must refuse a holder whose lease ran out (Redisson
   * getFencedLock). withLock hands the token as `held.token`.
   */
  getFencedLock(name: string): RFencedLock {
    this.throwIfClosed();
    return new FencedLock(this.context, name);
  }

  /**
   * All-or-nothing over several locks, which may come from different clients (Redisson
   * getMultiLock): held when every member is held; a member that cannot be taken in time gives
   * back the others. unlock() releases all.
   */
  getMultiLock(...locks: RLock[]): RLock {
    this.throwIfClosed();
    return new GroupLock(locks, {
      label: 'MultiLock',
      quorum: locks.length,
      memberErrorsAreFailures: false,
      watchdogLease: this.watchdogTimeout,
      ...this.groupReports(),
    });
  }

  /**
   * A quorum over locks on independent Redis masters (the Redlock algorithm, Redisson
   * getRedLock): held when a majority of members is held with time to spare after the clocks'
   * drift; a member whose server is down counts as not taken. Read docs/deployments.md first:
   * fencing (getFencedLock) is the safer answer to a lost lock.
   */
  getRedLock(...locks: RLock[]): RLock {
    this.throwIfClosed();
    return new GroupLock(locks, {
      label: 'RedLock',
      quorum: Math.floor(locks.length / 2) + 1,
      memberErrorsAreFailures: true,
      // Redlock's validity: what is left of the lease after taking it and allowing for clock drift
      // (1% of the lease plus 2 ms), as in the algorithm's description.
      validity: (lease, elapsed) => lease - elapsed - (lease * 0.01 + 2),
      watchdogLease: this.watchdogTimeout,
      ...this.groupReports(),
    });
  }

  /**
   * Runs fn as a new lock owner: every lock handle used anywhere in its async call chain acts for
   * that owner, so nested locking re-enters, and concurrent tasks exclude each other.
   */
  runInTask<T>(fn: () => Promise<T> | T): Promise<T> {
    if (typeof fn !== 'function') {
      throw Object.assign(new TypeError('fn must be a function'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    this.throwIfClosed();
    return runAsNewTask(async () => fn());
  }

  /**
   * Stops the watchdog, rejects pending waits with ClientClosedError, aborts the signals of
   * running withLock calls and closes the pub/sub connection this client opened. Locks still held
   * are not released: their leases run out (at most watchdogTimeout for watchdog locks).
   */
  async close(): Promise<void> {
    if (this.closer.signal.aborted) return;
    this.closer.abort(new ClientClosedError());
    this.calls.abortWaits(new ClientClosedError());
    this.watchdog.stop();
    for (const entry of this.book.all()) this.book.lose(entry, 'the LockClient was closed', false);
    this.fairWaiters.close();
    await this.subscriberInstance?.close();
  }

  get closed(): boolean {
    return this.closer.signal.aborted;
  }

  private async publishCommand(): Promise<PublishCommand> {
    return publishCommandOf(await this.pubSubMode());
  }

  private pubSubMode(): Promise<PubSubMode> {
    this.pubSubModeResolution ??= resolvePubSubMode(this.redis, this.pubSubOption).catch((error: unknown) => {
      // A failed probe (server unreachable) decides nothing: the next call asks again.
      this.pubSubModeResolution = undefined;
      throw error;
    });
    return this.pubSubModeResolution;
  }

  /** Where a group lock made by this client reports its lost quorum and its outages. */
  private groupReports(): Pick<GroupRules, 'reportLost' | 'reportRedisError'> {
    return {
      reportLost: (lost) => this.emit('lockLost', lost),
      reportRedisError: (report) => this.reportRedisError(report),
    };
  }

  /** Emits 'redisError', wrapping what is not an Error already (never throws). */
  private reportRedisError(report: RedisErrorReport): void {
    const error = report.error instanceof Error ? report.error : new Error(String(report.error));
    this.emit('redisError', { ...report, error });
  }

  private async subscriber(name: string, limits: StepLimits): Promise<Subscriber> {
    this.throwIfClosed();
    const mode = await this.calls.run(name, 'subscribe', () => this.pubSubMode(), limits);
    this.throwIfClosed();
    if (!this.subscriberInstance) {
      const home = clientChannel(this.id);
      const given = this.subscriberOption && { connection: this.subscriberOption, owned: false };
      this.subscriberInstance = new Subscriber(
        (handlers) => openLink(this.redis, mode, home, given, handlers),
        // Sharded: hand-offs come on each fair lock's own channel (see FairLock).
        mode === 'sharded' ? undefined : home,
        {
          onAddressedMessage: (message) => this.fairWaiters.onClientMessage(message),
          onResubscribed: () => this.fairWaiters.recheckAll(),
          onSubscribeFailed: (channel, error, retryInMs) =>
            this.reportRedisError({ name: channel, operation: 'subscribe', error, retryInMs }),
        },
      );
    }
    return this.subscriberInstance;
  }

  private throwIfClosed(): void {
    this.closer.signal.throwIfAborted();
  }
}

const DEFAULT_REPLICA_WAIT_TIMEOUT = 1_000;

function parseReplicaWait(option: ReplicaWait | undefined): Required<ReplicaWait> | undefined {
  if (option === undefined) return undefined;
  if (option === null || typeof option !== 'object') {
    throw Object.assign(new TypeError('waitForReplicas must be an object { replicas, timeout? }'), {
      code: 'ERR_INVALID_ARG_TYPE',
    });
  }
  return {
    replicas: checkTime('waitForReplicas.replicas', option.replicas, { min: 1, allowMinusOne: false }),
    // WAIT with timeout 0 blocks forever: never.
    timeout:
      option.timeout === undefined
        ? DEFAULT_REPLICA_WAIT_TIMEOUT
        : checkTime('waitForReplicas.timeout', option.timeout, { min: 1, allowMinusOne: false }),
  };
}
