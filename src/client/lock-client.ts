import { AsyncResource } from 'node:async_hooks';
import { EventEmitter, setMaxListeners } from 'node:events';
import { parseClientOptions, type ClientSettings, type LockClientOptions } from './options';
import { ClientPubSub } from './client-pubsub';
import { RunningBodies } from './running-bodies';
import { releaseHeldAtClose } from './release-at-close';
import { ClientClosedError, closedFor, LockLostError } from '../errors';
import { DEBUG, debug, emitSafely, LockEvents, type LockClientEvents } from '../events';
import { FairWaiters } from '../waiting/fair-waiters';
import { HandoffWatches } from '../waiting/handoff-watches';
import { RecentContention } from '../waiting/recent-contention';
import { HoldBook, type LostLease } from '../ownership/hold-book';
import { homeSlot, lockKeys, WAKE_MESSAGE } from '../protocol/keys';
import type { LockContext } from '../context';
import type { RedisErrorReport } from '../events';
import { FairLock } from '../locks/fair-lock';
import { FencedLock } from '../locks/fenced-lock';
import { GroupLock, type GroupRules } from '../locks/group/group-lock';
import { ReentrantLock } from '../locks/reentrant-lock';
import { ReadWriteLock, type ReadWriteLockOptions, type RReadWriteLock } from '../locks/read-write-lock';
import { SPIN_DEFAULTS, SpinLock, type SpinLockOptions } from '../locks/spin-lock';
import type { RFencedLock, RLock } from '../locks/types';
import { checkOwnerId, currentTask, runAsNewTask } from '../ownership/owner';
import { SiblingWaits } from '../waiting/sibling-waits';
import { OwnerGates } from '../ownership/owner-gates';
import { ReconnectCounter } from '../redis/reconnect-counter';
import { isCluster, type RedisConnection } from '../redis/connection';
import { RedisCalls } from '../redis/redis-calls';
import { ServerClock } from '../redis/server-clock';
import { ClientRegistry } from '../ownership/client-registry';
import { acknowledgedBy } from '../redis/replicas';
import { settledWithin } from '../util/timing';
import { checkKnownKeys, checkOptionsObject, checkTime, typeError } from '../util/validate';
import { Watchdog } from '../leases/watchdog';
import { CountDownLatch } from '../synchronizers/count-down-latch';
import { PermitExpirableSemaphore } from '../synchronizers/permit-expirable-semaphore';
import { Semaphore } from '../synchronizers/semaphore';
import type { RCountDownLatch, RPermitExpirableSemaphore, RSemaphore } from '../synchronizers/types';

export type { LockClientOptions } from './options';
export type { LockLostEvent, RedisErrorEvent } from '../events';

/** Options of runInTask. */
export interface TaskOptions {
  /**
   * Act as this owner id (the whole field written in the lock hash, e.g. `orders:job-42`, or a
   * Redisson-shaped `<uuid>:<n>`), in this process and any other that uses it: a lock taken by one
   * worker can be released or renewed by another. Keeping it unique per use is the caller's job.
   */
  ownerId?: string;
}

/** Options of close. */
export interface CloseOptions {
  /** How long to let running withLock bodies finish before their locks are released, in ms. Default 5000. */
  timeout?: number;
}

/** A command connection that may also open its own pub/sub connection. */
type CommandConnection = RedisConnection & { duplicate?: () => RedisConnection };

const DEFAULT_CLOSE_TIMEOUT = 5_000;

/**
 * Makes locks on one Redis connection. The connection stays the caller's (close() leaves it open);
 * the client adds one pub/sub connection for waiting and one timer for the watchdog.
 */
export class LockClient extends EventEmitter<LockClientEvents> {
  /**
   * The first half of every owner id this client writes (Redisson's connection-manager id): a
   * random UUID, or `<clientId>/<random>` with the clientId option. Unique to this client.
   */
  readonly id: string;
  readonly watchdogTimeout: number;
  readonly fairLockWaitTimeout: number;
  readonly fairLockHandoffTimeout: number;
  private readonly settings: ClientSettings;
  private readonly fairWaiters: FairWaiters;
  private readonly handoffWatches: HandoffWatches;
  private readonly lockWakeups: HandoffWatches;
  private readonly redis: CommandConnection;
  private readonly gates = new OwnerGates();
  private readonly book: HoldBook;
  private readonly watchdog: Watchdog;
  private readonly registry: ClientRegistry;
  /** Aborted when close() begins: no new acquisition, pending waits end. */
  private readonly closer = new AbortController();
  /** Aborted when close() is done. */
  private readonly finished = new AbortController();
  private closing?: Promise<void>;
  private readonly bodies = new RunningBodies();
  private readonly pubsub: ClientPubSub;
  private requestCount = 0;
  private readonly context: LockContext;
  private readonly calls: RedisCalls;
  /**
   * The async scope the client was made in. What lives as long as the client (the watchdog timer,
   * the pub/sub connections) starts there, not in the scope of the call that first needed it: it
   * would keep that caller's AsyncLocalStorage stores alive (a task, a request's context), and a
   * lock taken by a task could never be found orphaned.
   */
  private readonly scope = new AsyncResource('rlock.LockClient');

  constructor(redis: CommandConnection, options: LockClientOptions = {}) {
    super();
    if (redis === null || typeof redis !== 'object' || typeof redis.defineCommand !== 'function') {
      throw typeError('redis must be an ioredis-compatible client (Redis, Cluster, ...)');
    }
    const settings = parseClientOptions(redis, options);
    this.settings = settings;
    this.redis = redis;
    this.id = settings.id;
    this.watchdogTimeout = settings.watchdogTimeout;
    this.fairLockWaitTimeout = settings.fairLockWaitTimeout;
    this.fairLockHandoffTimeout = settings.fairLockHandoffTimeout;
    this.fairWaiters = new FairWaiters({
      keyPrefix: settings.keyPrefix,
      handoffTimeout: settings.fairLockHandoffTimeout,
      unclaimed: (name, ownerId) => this.giveBackUnclaimed(name, ownerId),
    });
    this.handoffWatches = new HandoffWatches(settings.fairLockHandoffTimeout, (name) =>
      new FairLock(this.context, name).settleHandoff(),
    );
    this.lockWakeups = new HandoffWatches(settings.fairLockHandoffTimeout, (name) =>
      new ReentrantLock(this.context, name).settleWakeup(),
    );
    this.pubsub = new ClientPubSub(redis, settings, this.id, this.scope, {
      onAddressedMessage: (message) => this.onAddressedMessage(message),
      onResubscribed: () => this.fairWaiters.recheckAll(),
      onSubscribeFailed: (channel, error, retryInMs) =>
        this.reportRedisError({ name: channel, operation: 'subscribe', error, retryInMs }),
    });
    // Every pending wait listens for the close; thousands of them are normal, not a leak.
    setMaxListeners(0, this.closer.signal);
    const clock: { current?: ServerClock } = {};
    this.calls = new RedisCalls(redis, settings.commandTimeout, (fn) => this.scope.runInAsyncScope(fn), {
      report: (name, operation, error, retryInMs) =>
        this.reportRedisError(
          retryInMs === undefined ? { name, operation, error } : { name, operation, error, retryInMs },
        ),
      onLate: () => clock.current?.invalidate(),
    });
    const reconnects = new ReconnectCounter(redis);
    clock.current = new ServerClock(this.calls, redis, reconnects);
    this.book = new HoldBook(this.gates, (lost: LostLease) => this.reportLost(lost));
    const report = (event: RedisErrorReport): void => this.reportRedisError(event);
    this.registry = new ClientRegistry(this.calls, redis, this.id, settings.label, report);
    this.watchdog = new Watchdog(this.calls, redis, this.book, this.fairWaiters, {
      timeout: settings.watchdogTimeout,
      waiterTimeout: settings.fairLockWaitTimeout,
      handoffTimeout: settings.fairLockHandoffTimeout,
      batchSize: settings.watchdogBatchSize,
      groupBySlot: isCluster(redis),
      keyPrefix: settings.keyPrefix,
      publishCommand: () => this.pubsub.publishCommand(),
      handedOn: (name) => this.handoffWatches.handedOn(name),
      report,
      keepAnnounced: (ms) => this.registry.keepFor(ms),
      inClientScope: (fn) => this.scope.runInAsyncScope(fn),
    });
    const replicaWait = settings.waitForReplicas;
    this.context = {
      redis,
      calls: this.calls,
      clientId: this.id,
      watchdogTimeout: settings.watchdogTimeout,
      book: this.book,
      fairLockWaitTimeout: settings.fairLockWaitTimeout,
      fairLockHandoffTimeout: settings.fairLockHandoffTimeout,
      fairWaiters: this.fairWaiters,
      handoffWatches: this.handoffWatches,
      lockWakeups: this.lockWakeups,
      watchdog: this.watchdog,
      closing: this.closer.signal,
      closed: this.finished.signal,
      gates: this.gates,
      siblingWaits: new SiblingWaits(),
      contention: new RecentContention(),
      registry: this.registry,
      keyPrefix: settings.keyPrefix,
      cluster: isCluster(redis),
      trackBody: (body, giveBack) => this.bodies.track(body, giveBack),
      subscriber: (name, limits) =>
        this.pubsub.subscriber(this.calls, name, limits, () => this.throwIfClosed()),
      openSubscriber: () => this.pubsub.opened(),
      reportRedisError: report,
      publishCommand: () => this.pubsub.publishCommand(),
      replicaAcks:
        replicaWait &&
        (async (name, key) => ({
          // WAIT blocks up to its own timeout: the call's budget starts after that.
          acknowledged: await this.calls.run(
            name,
            'waitForReplicas',
            () => acknowledgedBy(redis, settings.keyPrefix + key, replicaWait.replicas, replicaWait.timeout),
            { budget: replicaWait.timeout + settings.commandTimeout },
          ),
          required: replicaWait.replicas,
        })),
      newRequestId: () => `${this.id}:${(this.requestCount += 1)}`,
      reconnects,
      clock: clock.current,
      events: new LockEvents(this),
    };
  }

  /**
   * A reentrant, non-fair lock (Redisson getLock). Handles are cheap. Outside a task (withLock,
   * runInTask) the handle is the owner: unlock through the handle that locked.
   */
  getLock(name: string): RLock {
    this.throwIfClosed(name, 'getLock');
    return new ReentrantLock(this.context, name);
  }

  /**
   * A reentrant lock whose waiters acquire in the order they reached Redis, across processes
   * (Redisson getFairLock). Same API, ownership and re-entry rules as getLock.
   */
  getFairLock(name: string): RLock {
    this.throwIfClosed(name, 'getFairLock');
    return new FairLock(this.context, name);
  }

  /**
   * A reentrant lock whose every acquisition (re-entries too) carries a fencing token larger than
   * all before it, for stores that must refuse a holder whose lease ran out (Redisson
   * getFencedLock). withLock hands the token as `held.token`.
   */
  getFencedLock(name: string): RFencedLock {
    this.throwIfClosed(name, 'getFencedLock');
    return new FencedLock(this.context, name);
  }

  /**
   * A read-write lock (Redisson getReadWriteLock): many readers or one writer, each half a full
   * RLock in Redisson's layout. Outside a task the returned object owns both halves (so a writer
   * may take the read lock and keep it after releasing the write lock); inside a task the task
   * does. See docs/read-write-lock.md.
   */
  getReadWriteLock(name: string, options?: ReadWriteLockOptions): RReadWriteLock {
    this.throwIfClosed(name, 'getReadWriteLock');
    const given = checkOptionsObject('options', options);
    checkKnownKeys('options', given, ['writerPreference']);
    if (given.writerPreference !== undefined && typeof given.writerPreference !== 'boolean') {
      throw typeError(`options.writerPreference must be a boolean; got ${typeof given.writerPreference}`);
    }
    return new ReadWriteLock(this.context, name, given as ReadWriteLockOptions);
  }

  /**
   * A reentrant lock that never subscribes (Redisson getSpinLock): a waiter tries again after
   * exponentially growing pauses with jitter. Same layout as getLock, so both exclude each other.
   * For proxies and managed services without pub/sub. See docs/spin-lock.md.
   */
  getSpinLock(name: string, options?: SpinLockOptions): RLock {
    this.throwIfClosed(name, 'getSpinLock');
    const given = checkOptionsObject('options', options);
    checkKnownKeys('options', given, ['initialDelay', 'maxDelay', 'multiplier']);
    const initialDelay =
      given.initialDelay === undefined
        ? SPIN_DEFAULTS.initialDelay
        : checkTime('options.initialDelay', given.initialDelay, { min: 1, allowMinusOne: false });
    const maxDelay =
      given.maxDelay === undefined
        ? Math.max(SPIN_DEFAULTS.maxDelay, initialDelay)
        : checkTime('options.maxDelay', given.maxDelay, { min: initialDelay, allowMinusOne: false });
    const multiplier = given.multiplier ?? SPIN_DEFAULTS.multiplier;
    if (
      typeof multiplier !== 'number' ||
      !Number.isFinite(multiplier) ||
      multiplier < 1 ||
      multiplier > 100
    ) {
      throw Object.assign(
        new RangeError(`options.multiplier must be a number from 1 to 100; got ${String(multiplier)}`),
        {
          code: 'ERR_OUT_OF_RANGE',
        },
      );
    }
    return new SpinLock(this.context, name, undefined, { initialDelay, maxDelay, multiplier });
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
      kind: 'multi',
      quorum: locks.length,
      watchdogLease: this.watchdogTimeout,
      ...this.groupHooks(),
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
      kind: 'red',
      quorum: Math.floor(locks.length / 2) + 1,
      // Redlock's validity: what is left of the lease after taking it and allowing for clock drift
      // (1% of the lease plus 2 ms), as in the algorithm's description.
      validity: (lease, elapsed) => lease - elapsed - (lease * 0.01 + 2),
      watchdogLease: this.watchdogTimeout,
      ...this.groupHooks(),
    });
  }

  /**
   * A counting semaphore (Redisson getSemaphore): permits at the name, no owner (any task or
   * process may release), waiters woken by releases. Set its permits once with trySetPermits.
   */
  getSemaphore(name: string): RSemaphore {
    this.throwIfClosed(name, 'getSemaphore');
    return new Semaphore(this.context, name);
  }

  /**
   * A semaphore whose permits each have an id and may have a lease; a permit whose lease runs
   * out returns by itself (Redisson getPermitExpirableSemaphore).
   */
  getPermitExpirableSemaphore(name: string): RPermitExpirableSemaphore {
    this.throwIfClosed(name, 'getPermitExpirableSemaphore');
    return new PermitExpirableSemaphore(this.context, name);
  }

  /** A count-down latch (Redisson getCountDownLatch): await() returns once the count is zero. */
  getCountDownLatch(name: string): RCountDownLatch {
    this.throwIfClosed(name, 'getCountDownLatch');
    return new CountDownLatch(this.context, name);
  }

  /**
   * Runs fn as a new lock owner: every lock handle used anywhere in its async call chain acts for
   * that owner, so nested locking re-enters, and concurrent tasks exclude each other. With
   * `ownerId`, fn acts as that owner instead (see TaskOptions).
   */
  runInTask<T>(fn: () => Promise<T> | T, options?: TaskOptions): Promise<T> {
    // Bad input rejects, as withLock's does: a caller awaiting the task sees every failure alike.
    let ownerId: string | undefined;
    try {
      if (typeof fn !== 'function') throw typeError('fn must be a function');
      const given = checkOptionsObject('options', options);
      checkKnownKeys('options', given, ['ownerId']);
      ownerId = given.ownerId === undefined ? undefined : checkOwnerId(given.ownerId);
      this.throwIfClosed();
    } catch (error) {
      return Promise.reject(error);
    }
    return runAsNewTask(async () => fn(), ownerId);
  }

  /**
   * Shuts the client down without leaving locks behind for others to wait out:
   * 1. no new acquisition starts, and pending waits reject with ClientClosedError;
   * 2. the signals of running withLock bodies abort (LockLostError, code 'client-closed');
   * 3. those bodies get up to `timeout` ms (default 5000) to finish and release as usual;
   * 4. every hold this client still has is released, so waiters elsewhere take over at once;
   * 5. subscriptions and the connections the client opened are closed.
   * The command connection passed to the constructor stays open: it is the caller's.
   */
  close(options?: CloseOptions): Promise<void> {
    let timeout: number;
    try {
      const given = checkOptionsObject('options', options);
      checkKnownKeys('options', given, ['timeout']);
      timeout =
        given.timeout === undefined
          ? DEFAULT_CLOSE_TIMEOUT
          : checkTime('timeout', given.timeout, { min: 0, allowMinusOne: false });
    } catch (error) {
      return Promise.reject(error);
    }
    this.closing ??= this.shutDown(timeout);
    return this.closing;
  }

  get closed(): boolean {
    return this.closer.signal.aborted;
  }

  private async shutDown(timeout: number): Promise<void> {
    const closedError = new ClientClosedError();
    this.closer.abort(closedError);
    this.calls.abortWaits(closedError);
    this.fairWaiters.close();
    this.book.abortGuards(
      (entry) => new LockLostError(entry.name, entry.ownerId, 'client-closed', 'the LockClient is closing'),
    );
    // A close() called from inside a withLock body does not wait for that body (nor the bodies it
    // runs in): they wait for close().
    const caller = currentTask()?.frame;
    await settledWithin(
      this.bodies.done((body) => caller === undefined || !caller.isWithin(body)),
      timeout,
    );
    // Each bounded by commandTimeout: a Redis that is down delays close() no longer than that.
    await Promise.all([
      releaseHeldAtClose(this.book, this.context),
      this.bodies.giveBackAll(),
      this.registry.remove(),
    ]);
    this.watchdog.stop();
    this.handoffWatches.close();
    this.lockWakeups.close();
    this.finished.abort(closedError);
    await this.pubsub.close();
  }

  /** What a group lock made by this client reports to it, and its withLock bodies. */
  private groupHooks(): Pick<
    GroupRules,
    'reportLost' | 'reportRedisError' | 'trackBody' | 'closing' | 'events'
  > {
    return {
      reportLost: (lost) => this.reportLost(lost),
      events: this.context.events,
      reportRedisError: (report) => this.reportRedisError(report),
      trackBody: (body) => this.bodies.track(body),
      closing: this.closer.signal,
    };
  }

  private reportLost(lost: LostLease): void {
    if (DEBUG) debug('lock %s: lost by %s (%s): %s', lost.name, lost.ownerId, lost.code, lost.reason);
    emitSafely(this, 'lockLost', lost);
  }

  /** Emits 'redisError', wrapping what is not an Error already (never throws). */
  private reportRedisError(report: RedisErrorReport): void {
    const error = report.error instanceof Error ? report.error : new Error(String(report.error));
    if (DEBUG) debug('%s %s failed: %s', report.operation, report.name, error.message);
    emitSafely(this, 'redisError', { ...report, error });
  }

  /**
   * A message for this client alone: a fair lock's hand-off or request to look again (see
   * FairWaiters), or a getLock release that woke this client, "wake\n<lock key>" (see
   * lua/include/lock-waiters.lua): one of its waiters there tries, or, with none left, the wake-up
   * goes on to the next waiting client.
   */
  private onAddressedMessage(message: string): void {
    if (!message.startsWith(WAKE_MESSAGE)) return this.fairWaiters.onHandoffMessage(message);
    const key = message.slice(WAKE_MESSAGE.length);
    const prefix = this.settings.keyPrefix;
    if (!key.startsWith(prefix) || this.finished.signal.aborted) return;
    const name = key.slice(prefix.length);
    const { channel } = lockKeys(name, homeSlot(name, prefix, isCluster(this.redis)));
    if (!this.pubsub.opened()?.deliver(channel)) void new ReentrantLock(this.context, name).passOnWakeup();
  }

  /**
   * A hand-off came for an owner of this client that no longer waits on the lock (see FairWaiters):
   * given back at once rather than left to run out. Only the ids this client made are surely its
   * own: an explicit owner id may wait in another process.
   */
  private giveBackUnclaimed(name: string, ownerId: string): void {
    if (!ownerId.startsWith(`${this.id}:`) || this.finished.signal.aborted) return;
    void new FairLock(this.context, name).giveBackUnclaimed(ownerId);
  }

  /** Throws once close() has begun; the error names the lock of `operation`, when there is one. */
  private throwIfClosed(lockName?: unknown, operation?: string): void {
    const { signal } = this.closer;
    if (!signal.aborted) return;
    throw typeof lockName === 'string' && operation !== undefined
      ? closedFor(signal.reason, lockName, operation)
      : signal.reason;
  }
}
