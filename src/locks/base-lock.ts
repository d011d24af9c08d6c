import {
  ClientClosedError,
  closedFor,
  LockNotHeldError,
  LockNotReplicatedError,
  LockTimeoutError,
  type LockLostCode,
} from '../errors';
import type { Hold, LockClass, TakenHold } from '../ownership/hold-book';
import { DEBUG, debugWakeSource, type LockKind as EventKind } from '../events';
import { holdLatchBase, holdMarkField, homeSlot } from '../protocol/keys';
import { onAbort } from '../util/abort';
import { currentTask, Frame, nextOwnerNumber, ownerIdOf, runAsHandle, runInFrame } from '../ownership/owner';
import type { GateEntry } from '../ownership/owner-gates';
import type { SiblingWait } from '../waiting/sibling-waits';
import { isPassing, type CallLimits, type Resent } from '../redis/redis-calls';
import {
  callUntilAnswered,
  changeOnce,
  isReleaseUnanswered,
  openWindow,
  sendUntilAnswered,
  settleByLatch,
  windowLength,
  type Change,
  type RequestWindow,
} from '../redis/resend';
import {
  RELEASED_AND_HANDED_ON,
  renewLocks,
  type ReleaseAnswer,
  type ReleaseWhich,
} from '../protocol/scripts';
import { checkLockName, parseLockArguments, parseLockOptions, parseTryLockArguments } from '../util/validate';
import {
  acquireOrWait,
  afterFirstAnswer,
  afterFirstFailure,
  firstAttemptOf,
  type AcquireOutcome,
  type AttemptKind,
  type FirstAnswer,
  type StepLimits,
  type WakeSource,
} from '../waiting/acquire-or-wait';
import { Acquisition, type Acquired, type AcquireHow } from './acquisition';
import type { LockContext } from '../context';
import { lockHold } from './lock-hold';
import type { Held, LockHold, LockOptions, RLock, TryLockOptions, WithLockOptions } from './types';

type GiveUp = (owner: string, limits: StepLimits) => Promise<unknown>;

/** What lock() resolves to, whatever acquire() answered. */
function toVoid(): void {}

/**
 * Who a handle acts for outside any task: its own owner number and frame by default; the halves of
 * a read-write lock share their parent's, so that the parent owns both (a top-level downgrade).
 */
export interface HandleOwner {
  readonly number: number;
  readonly frame: Frame;
}

/** A new owner for a handle, or for the handles that share it. */
export function newHandleOwner(): HandleOwner {
  return { number: nextOwnerNumber(), frame: new Frame() };
}

/** The options of an acquisition that has none. */
const NO_HOW: AcquireHow = Object.freeze({});

/**
 * Everything the lock kinds share: argument rules, who the owner is, the book of holds, the wait
 * loop, withLock. A kind supplies its protocol: how one attempt, one release and a forced delete
 * run in Redis, and where its waiters' wake-ups come from.
 */
export abstract class BaseLock implements RLock {
  readonly name: string;
  /** What the client's events call this kind of lock. */
  abstract readonly kind: EventKind;
  /** The lock hash, whose field per owner holds the hold count: every kind keeps it at the name (Redisson's layout). */
  protected readonly hashKey: string;
  /**
   * The cluster slot every key of this lock shares when an ioredis keyPrefix moves the hash out of
   * the name's own slot (see homeSlot); undefined otherwise.
   */
  protected readonly slot: number | undefined;
  /** The owner number used outside any task: the handle itself owns the lock. */
  private readonly handleOwner: number;
  /** What every hold latch of this lock begins with (see holdLatchBase), once made. */
  private latchBase?: string;
  /** The owner id of this handle outside a task, once asked for. */
  private handleOwnerId?: string;
  /** The frame of the handle's own calls outside any task. */
  private readonly handleFrame: Frame;

  constructor(
    protected readonly context: LockContext,
    name: unknown,
    owner: HandleOwner = newHandleOwner(),
  ) {
    this.name = checkLockName(name);
    this.handleOwner = owner.number;
    this.handleFrame = owner.frame;
    this.hashKey = this.name;
    this.slot = homeSlot(this.name, context.keyPrefix, context.cluster);
  }

  /** A fresh latch key for one acquire request (and later the release of its hold). */
  newLatch(): string {
    return `${this.latchBaseOf()}:${this.context.newRequestId()}`;
  }

  /** The field that marks the hold of the request of `latch` (one of newLatch's) in the lock hash. */
  protected markOf(latch: string): string {
    return holdMarkField(latch.slice(this.latchBaseOf().length + 1));
  }

  private latchBaseOf(): string {
    return (this.latchBase ??= holdLatchBase(this.name, this.slot));
  }

  /** One attempt: null when acquired or re-entered, else the holder's remaining ttl in ms. */
  protected abstract attempt(
    owner: string,
    leaseMs: number,
    latch: string,
    kind: AttemptKind,
  ): Promise<number | null>;
  /**
   * Releases the hold request `latch` took ('marked'), or any one hold of the owner within a window
   * (for a hold Redis did not mark: see releaseAnyHold): 1 when the owner's last hold is gone, 0
   * when it still holds, null when the hold is gone.
   */
  protected abstract release(
    owner: string,
    latch: string,
    latchMs: number,
    which: ReleaseWhich,
  ): Promise<ReleaseAnswer>;
  /**
   * What a release script's answer means, once this client acted on it: a kind whose release may
   * hand the lock on or wake a waiter (RELEASED_AND_HANDED_ON) watches that, and answers 1. Read
   * where the answer is read anyway, not by a promise of its own per release.
   */
  protected releaseAnswered(answer: ReleaseAnswer): 0 | 1 | null {
    return answer === RELEASED_AND_HANDED_ON ? 1 : answer;
  }
  /**
   * Withdraws the acquire request of `latch`, whose outcome its caller never learned: releases the
   * hold it took, or makes sure a copy of it that runs later takes none.
   */
  protected abstract withdraw(owner: string, latch: string, latchMs: number): Promise<unknown>;
  protected abstract forceRelease(): Promise<boolean>;
  /** Where this owner's wake-ups come from while it waits; ready within the limits' budget. */
  protected abstract openWakeSource(owner: string, limits: StepLimits): Promise<WakeSource>;
  /** Whether the wake source must be open before an attempt joins a queue (see AcquirePlan). */
  protected abstract readonly wakeSourceFirst: boolean;
  /** Leaves whatever a wait left behind (a queue place), within `limits`; nothing for a plain lock. */
  protected giveUp?(owner: string, limits: StepLimits): Promise<unknown>;
  /**
   * Takes over a lock a release handed to this owner, with its own lease, its hold marked with
   * `latch`; false when lost.
   */
  protected confirmHandoff?(owner: string, leaseMs: number, latch: string): Promise<boolean>;

  lock(leaseTime?: number): Promise<void>;
  lock(options: LockOptions): Promise<void>;
  lock(arg?: number | LockOptions, extra?: unknown): Promise<void> {
    // Not async: with thousands of acquisitions in flight, every suspended frame is more for the
    // garbage collector to copy. Bad input still rejects rather than throws.
    let acquiring: Promise<unknown>;
    try {
      const { leaseTime, signal } = parseLockArguments(arg, extra);
      acquiring = this.acquire(-1, leaseTime, signal);
    } catch (error) {
      return Promise.reject(error);
    }
    return acquiring.then(toVoid);
  }

  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, leaseTime?: number): Promise<boolean>;
  tryLock(options: TryLockOptions): Promise<boolean>;
  async tryLock(arg?: number | TryLockOptions, leaseTime?: number): Promise<boolean> {
    const { waitTime, leaseTime: lease, signal } = parseTryLockArguments(arg, leaseTime);
    return (await this.acquire(waitTime, lease, signal)) !== false;
  }

  unlock(): Promise<void> {
    // Not async, as lock(): errors still reject.
    let releasing: Promise<void>;
    try {
      this.throwIfClosed('closed', 'release');
      releasing = this.releaseHold(this.currentOwner());
    } catch (error) {
      return Promise.reject(error);
    }
    return this.context.replicaAcks ? releasing.then(() => this.requireReplicas('release')) : releasing;
  }

  /**
   * Releases `hold` of `owner`, or its newest (unlock() without the replica check). A release whose
   * outcome Redis never told is sent again in the background until it answers (its latch makes it
   * count once), so that the hold does not stay for its whole lease. Not async, as acquireHold:
   * one continuation per release in flight instead of a suspended frame.
   */
  private releaseHold(owner: string, hold?: Hold, quiet = false): Promise<void> {
    const { book } = this.context;
    let taken: TakenHold;
    let lostBefore: LockLostCode | undefined;
    try {
      this.noticeOverdueLease(owner);
      lostBefore = book.lostCodeOf(this.name, owner);
      const found = book.takeForRelease(this.name, owner, hold);
      if (!found) {
        // Nothing taken by hand here. Only an explicit owner id may hold the lock through another
        // client or process; a generated one has nothing in Redis that this client does not know.
        if (currentTask()?.ownerId === undefined) throw this.notHeld(owner, lostBefore);
        return this.releaseUnknownHold(owner);
      }
      taken = found;
    } catch (error) {
      return Promise.reject(error);
    }
    const { latch, marked } = taken.hold;
    const latchMs = this.latchLifetime(taken.hold);
    if (!taken.inBook) return this.releaseLostHold(owner, taken.hold, latchMs, lostBefore);
    const closesBefore = this.context.reconnects.count;
    const onResent = (outcome: Resent<ReleaseAnswer>): void =>
      this.releasedInBackground(owner, taken, outcome, quiet);
    const released = marked
      ? this.callUntilAnswered(
          'release',
          latchMs,
          () => this.release(owner, latch, latchMs, 'marked'),
          onResent,
        )
      : this.releaseAnyHold(owner, latch, latchMs, onResent);
    return released.then(
      (result) => {
        try {
          this.afterRelease(owner, taken, this.releaseAnswered(result), closesBefore, lostBefore, quiet);
        } finally {
          this.context.gates.leave(taken.hold.entry);
        }
      },
      (error: unknown) => {
        // Sent again in the background (see callUntilAnswered): a later unlock() is told so.
        if (isPassing(error)) book.releaseUnanswered(this.name, owner);
        this.context.gates.leave(taken.hold.entry);
        throw error;
      },
    );
  }

  /** What Redis answered to the release of `taken`, told to the book and the events. */
  private afterRelease(
    owner: string,
    taken: TakenHold,
    answer: 0 | 1 | null,
    closesBefore: number,
    lostBefore: LockLostCode | undefined,
    quiet: boolean,
  ): void {
    const { book } = this.context;
    let result = answer;
    const rest = book.get(this.name, owner);
    if (result === null && !rest && this.context.reconnects.count !== closesBefore) {
      // The connection closed while the release was out, and ioredis sent it again: the copy
      // finds nothing when the first run deleted the lock and only its reply was lost. (A lease
      // that ran out in that same moment reads the same; either way nothing is held now.)
      result = 1;
    }
    if (result === null) {
      if (rest) book.lose(rest, 'not-in-redis', 'Redis no longer had its holds');
      else if (taken.entry) book.lostAtRelease(taken.entry, 'Redis no longer had its holds');
      throw this.notHeld(owner, lostBefore ?? 'not-in-redis');
    }
    if (result === 1 && rest)
      book.lose(rest, 'not-in-redis', 'Redis had fewer holds than this client counted');
    if (!quiet && this.context.events.observes('released'))
      this.context.events.released(this, owner, taken.hold.acquiredAt, result === 1);
  }

  /**
   * What became of a release that Redis did not answer in time, sent again in the background (the
   * caller got RedisUnavailableError, or withLock went on with its result). Given up on: reported
   * already (redisError). Answered: the hold was released, as the released event says; unless the
   * release's own answer, come late, says that Redis no longer had the hold: then the lease had
   * been lost while it was held (lockLost). A copy that finds nothing says little: its first run
   * may have released the hold (its latch makes the copy change nothing), as is usual when only
   * the answer was slow.
   */
  private releasedInBackground(
    owner: string,
    taken: TakenHold,
    outcome: Resent<ReleaseAnswer>,
    quiet: boolean,
  ): void {
    if (!outcome.answered) return;
    const { book, events } = this.context;
    const answer = this.releaseAnswered(outcome.value);
    if (answer === null && !outcome.byCopy) {
      if (taken.entry) book.lostAtRelease(taken.entry, 'Redis no longer had its holds when its release ran');
      return;
    }
    if (!quiet && events.observes('released'))
      events.released(this, owner, taken.hold.acquiredAt, answer !== 0);
  }

  /**
   * The release of a hold whose lease was lost, while a sibling may hold the lock afresh as the
   * same owner: gives back only what this very hold still counts (its latch says), then tells the
   * holder.
   */
  private async releaseLostHold(
    owner: string,
    hold: Hold,
    latchMs: number,
    lostBefore: LockLostCode | undefined,
  ): Promise<void> {
    try {
      await this.callUntilAnswered('release', latchMs, () => this.withdraw(owner, hold.latch, latchMs));
      throw this.notHeld(owner, lostBefore ?? 'not-in-redis');
    } finally {
      this.context.gates.leave(hold.entry);
    }
  }

  /**
   * Releases any one hold of `owner`, for a hold Redis did not mark. No mark tells a copy of it that
   * ran late that the hold it would take is another one, so its copies act only inside a window
   * (see RequestWindow), which its latch outlives. A release Redis does not answer in time goes on
   * in the background until it has taken effect once (see changeOnce): settled through its latch,
   * and made again under a fresh latch when it did not take effect. The first request goes by the
   * hold's own latch, as a release of a hand-off confirmed meanwhile must.
   */
  private releaseAnyHold(
    owner: string,
    latch: string,
    latchMs: number,
    onResent?: (outcome: Resent<ReleaseAnswer>) => void,
  ): Promise<ReleaseAnswer> {
    const { calls, clock, redis } = this.context;
    let next: string | undefined = latch;
    const change: Change<ReleaseAnswer, RequestWindow & { latch: string }> = {
      open: async (lengthMs, limits) => {
        const window = await openWindow(clock, this.name, lengthMs, limits);
        const requestLatch = next ?? this.newLatch();
        next = undefined;
        return { ...window, latch: requestLatch };
      },
      send: (request) => this.release(owner, request.latch, request.lengthMs, request.until),
      settle: (request) => settleByLatch(redis, request, (answer) => (answer === 'r1' ? 1 : 0)),
    };
    return changeOnce(
      calls,
      this.name,
      'release',
      change,
      windowLength(latchMs, calls.commandTimeout),
      onResent,
    );
  }

  /** unlock() of an explicit owner id this client holds nothing for: it may hold it elsewhere. */
  private async releaseUnknownHold(owner: string): Promise<void> {
    const result = this.releaseAnswered(
      await this.releaseAnyHold(owner, this.newLatch(), this.context.watchdogTimeout),
    );
    if (result === null) throw this.notHeld(owner, undefined);
    if (this.context.events.observes('released'))
      this.context.events.released(this, owner, undefined, result === 1);
  }

  /**
   * A release or withdrawal whose outcome must be learned (see callUntilAnswered), sent again for
   * as long as its latch lives at least.
   */
  private callUntilAnswered<T>(
    operation: string,
    latchMs: number,
    send: () => Promise<T>,
    onResent?: (outcome: Resent<T>) => void,
  ): Promise<T> {
    return callUntilAnswered(
      this.context.calls,
      this.name,
      operation,
      performance.now() + latchMs,
      send,
      onResent,
    );
  }

  /** The LockNotHeldError for `owner`, saying why when this client can tell. */
  private notHeld(owner: string, lost: LockLostCode | undefined): LockNotHeldError {
    const { book } = this.context;
    return new LockNotHeldError(this.name, owner, {
      heldByOthers: book.otherHolders(this.name, owner),
      heldForBody: book.heldForBody(this.name, owner),
      inTask: currentTask() !== undefined,
      lost,
      releaseUnanswered: lost === undefined && book.isReleaseUnanswered(this.name, owner),
    });
  }

  /** With waitForReplicas: throws LockNotReplicatedError when too few replicas have the last write. */
  private async requireReplicas(operation: 'acquire' | 'release'): Promise<void> {
    if (!this.context.replicaAcks) return;
    const { acknowledged, required } = await this.context.replicaAcks(this.name, this.hashKey);
    if (acknowledged < required)
      throw new LockNotReplicatedError(this.name, operation, acknowledged, required);
  }

  async forceUnlock(): Promise<boolean> {
    this.throwIfClosed('closed', 'forceUnlock');
    for (const entry of this.context.book.holdersOf(this.name)) {
      this.context.book.lose(entry, 'force-unlocked', 'forceUnlock() deleted it');
    }
    return this.call('forceUnlock', () => this.forceRelease());
  }

  async isLocked(): Promise<boolean> {
    this.throwIfClosed('closed', 'isLocked');
    return (await this.call('isLocked', () => this.context.redis.exists(this.hashKey))) === 1;
  }

  async isHeldByCurrentTask(): Promise<boolean> {
    this.throwIfClosed('closed', 'isHeldByCurrentTask');
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    return (
      (await this.call('isHeldByCurrentTask', () => this.context.redis.hexists(this.hashKey, owner))) === 1
    );
  }

  async getHoldCount(): Promise<number> {
    this.throwIfClosed('closed', 'getHoldCount');
    const owner = this.currentOwner();
    this.noticeOverdueLease(owner);
    const count = await this.call('getHoldCount', () => this.context.redis.hget(this.hashKey, owner));
    return count === null || count === undefined ? 0 : Number(count);
  }

  async remainTimeToLive(): Promise<number> {
    this.throwIfClosed('closed', 'remainTimeToLive');
    return this.call('remainTimeToLive', () => this.context.redis.pttl(this.hashKey));
  }

  /**
   * Acquires, runs fn in a frame of its own, always releases. Nested calls inside fn re-enter at
   * once; a sibling branch of the same task that enters this lock meanwhile waits until fn is done.
   * Outside a task it acts for this handle, as lock() does (so it re-enters what the handle holds),
   * and fn runs as a task of the handle's owner.
   */
  async withLock<T>(fn: (held: Held) => Promise<T> | T, options?: WithLockOptions): Promise<T> {
    if (typeof fn !== 'function') {
      throw Object.assign(new TypeError('fn must be a function'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    const parsed = parseLockOptions(options);
    const waitTime = parsed.waitTime ?? -1;
    const run = async (): Promise<T> => {
      const owner = this.currentOwner();
      const body = new Frame(this.currentFrame());
      const acquired = await this.acquire(waitTime, parsed.leaseTime, parsed.signal, { body });
      if (acquired === false) throw new LockTimeoutError(this.name, waitTime);
      const { guard, dispose } = this.watchHold(owner);
      // The caller's signal aborts the held one too (without AbortSignal.any, which keeps a little
      // for every call made with a long-lived signal).
      const userSignal = parsed.signal;
      const stopListening = userSignal && onAbort(userSignal, () => guard.abort(userSignal.reason));
      const done = this.context.trackBody(body);
      let result: T;
      try {
        const held =
          acquired.token === undefined
            ? { signal: guard.signal }
            : { signal: guard.signal, token: acquired.token };
        result = await runInFrame(body, () => fn(held));
      } catch (error) {
        // The callback's error is what the caller needs; a failed release must not hide it.
        await this.releaseOwn(owner, acquired.hold).catch(() => undefined);
        throw error;
      } finally {
        stopListening?.();
        dispose();
        done();
      }
      // The body did its work: a release Redis did not answer goes on in the background, and the
      // result stands (a caller that retries on errors must not run the body twice).
      await this.releaseOwn(owner, acquired.hold, true);
      return result;
    };
    return currentTask() ? run() : runAsHandle(this, this.handleOwner, this.handleFrame, run);
  }

  /**
   * Acquires as lock() does, for the current owner, and hands back the hold: its release gives
   * back this very hold (not whatever is newest). Calls nested after it in the same owner's code
   * re-enter, as after lock().
   */
  async hold(options?: WithLockOptions): Promise<LockHold> {
    const parsed = parseLockOptions(options);
    const waitTime = parsed.waitTime ?? -1;
    const owner = this.currentOwner();
    const acquired = await this.acquire(waitTime, parsed.leaseTime, parsed.signal);
    if (acquired === false) throw new LockTimeoutError(this.name, waitTime);
    const { guard, dispose } = this.watchHold(owner);
    return lockHold(guard.signal, acquired.token, async () => {
      dispose();
      // close() gave back every hold already (and aborted the signal): nothing left to release.
      if (this.context.closed.aborted) return;
      await this.releaseOwn(owner, acquired.hold);
    });
  }

  /** close(): gives back `hold` of `owner`, so that waiters elsewhere take over at once. */
  async releaseAtClose(owner: string, hold: Hold, quiet: boolean): Promise<void> {
    await this.releaseHold(owner, hold, quiet).catch(() => undefined);
  }

  /**
   * withLock's release: its own hold (not whatever is newest), then the replica check. `afterWork`:
   * the body did its work, and a release that went unanswered (it goes on in the background, see
   * releasedOrResent in redis/resend.ts) does not fail it; there is nothing for replicas to have then.
   */
  private async releaseOwn(owner: string, hold: Hold, afterWork = false): Promise<void> {
    if (this.context.closed.aborted) {
      throw new ClientClosedError(
        `the LockClient was closed while this withLock body ran: close() released lock "${this.name}" ` +
          'before the body was done (its signal had aborted)',
        { lockName: this.name, operation: 'release' },
      );
    }
    try {
      await this.releaseHold(owner, hold);
    } catch (error) {
      if (afterWork && isReleaseUnanswered(error)) return;
      throw error;
    }
    if (this.context.replicaAcks) await this.requireReplicas('release');
  }

  /**
   * Watches the current owner's hold on this lock (for a group lock): the signal aborts when the
   * lease is lost. Undefined when the owner holds nothing here.
   */
  watchCurrentHold(): { signal: AbortSignal; dispose: () => void } | undefined {
    const owner = this.currentOwner();
    if (!this.context.book.get(this.name, owner)) return undefined;
    const { guard, dispose } = this.watchHold(owner);
    return { signal: guard.signal, dispose };
  }

  /**
   * A controller that aborts when `owner`'s hold on this lock is lost (a plain one when the book
   * has no entry), and how to stop watching.
   */
  private watchHold(owner: string): { guard: AbortController; dispose: () => void } {
    const { book } = this.context;
    const entry = book.get(this.name, owner);
    const guard = entry ? book.guard(entry) : new AbortController();
    return { guard, dispose: () => entry?.guards?.delete(guard) };
  }

  /**
   * Cuts `hold`, which a group lock took of this member with a longer lease, to leaseTime from now
   * (the group's last step). Only when it is the owner's one hold here: an owner that held this
   * member before keeps the ttl it has, as at any re-entry (a short inner lease never cuts off an
   * outer hold). A member Redis no longer has for the owner is a lost lease.
   */
  async shortenLease(hold: Hold, leaseTime: number): Promise<void> {
    const { book } = this.context;
    const owner = this.currentOwner();
    const before = book.get(this.name, owner);
    if (before?.holds.length !== 1 || before.holds[0] !== hold) return;
    const sentAt = performance.now();
    const kept = await this.call('renew', () => this.setLease(owner, leaseTime));
    const entry = book.get(this.name, owner);
    // Released meanwhile (the group gave up): nothing left to cut.
    if (entry !== before || !entry.holds.includes(hold)) return;
    if (kept === 1) book.setLease(entry, hold, leaseTime, sentAt + leaseTime);
    else book.lose(entry, 'not-in-redis', 'Redis no longer had it when its lease was set');
  }

  /**
   * A group lock's attempt at this member: tryLock, except that any Redis failure fails it at once
   * (the group decides what to do), the group hears when the member waits for another holder,
   * and a lost lease is the group's to report (see GroupLock).
   */
  async tryLockAsMember(options: {
    waitTime: number;
    leaseTime: number;
    signal: AbortSignal;
    body?: Frame;
    onHeldElsewhere: () => void;
  }): Promise<Hold | false> {
    const { waitTime, leaseTime, signal, body, onHeldElsewhere } = options;
    const how = { body, quiet: true, failFast: true, onHeldElsewhere };
    const acquired = await this.acquire(waitTime, leaseTime, signal, how);
    return acquired === false ? false : acquired.hold;
  }

  /** A group lock's release of the hold it took of this member (see tryLockAsMember). */
  async releaseAsMember(hold: Hold): Promise<void> {
    this.throwIfClosed('closed', 'release');
    await this.releaseHold(this.currentOwner(), hold, true);
    if (this.context.replicaAcks) await this.requireReplicas('release');
  }

  /** The owner id the current caller acts for on this lock. */
  currentOwnerId(): string {
    return this.currentOwner();
  }

  /** The frame the current caller runs in: its task's (or withLock body's), or the handle's. */
  currentFrame(): Frame {
    return currentTask()?.frame ?? this.handleFrame;
  }

  /** Sets the lease of `owner`'s holds to leaseTime from now: 1 when done, 0 when it holds none. */
  protected async setLease(owner: string, leaseTime: number): Promise<number> {
    const [kept] = await renewLocks(this.context.redis, [this.hashKey], [leaseTime, owner]);
    return kept ?? 0;
  }

  /**
   * The owner whose branches this lock's gate keeps apart (see OwnerGates): the owner id itself,
   * except where two lock kinds share one owner in Redis (a read-write lock's halves).
   */
  protected gateOwner(owner: string): string {
    return owner;
  }

  /** A read lock's timeout prefix for `owner`, which its watchdog renewals include; none otherwise. */
  protected readTimeoutsOf(_owner: string): string | undefined {
    return undefined;
  }

  /** A read-write lock's writer-preference flag, which its watchdog renewals keep alive; none otherwise. */
  protected preferenceOf(): string | undefined {
    return undefined;
  }

  /** The fencing token an acquiring attempt was given, for lock kinds that issue them. */
  protected tokenOf(_latch: string): number | undefined {
    return undefined;
  }

  /**
   * A holder whose lease ran out (its process stood still, or Redis did not renew it) learns of
   * the loss before its next call through this lock (unlock, re-entry, hold queries) sends
   * anything: the timers that would have told it may not have run yet. Why it ran out is the
   * watchdog's to say (see Watchdog.noticeOverdue), whichever timer runs first.
   */
  private noticeOverdueLease(owner: string): void {
    const entry = this.context.book.get(this.name, owner);
    if (entry && entry.leaseEnd <= performance.now()) this.context.watchdog.noticeOverdue(entry);
  }

  /** acquireHold, reported to the client's events when something listens (see LockEvents). */
  protected acquire(
    waitTime: number,
    leaseTime: number,
    signal?: AbortSignal,
    how: AcquireHow = NO_HOW,
  ): Promise<false | Acquired> {
    const { events } = this.context;
    if (how.quiet || !events.observes('acquired')) return this.acquireHold(waitTime, leaseTime, signal, how);
    return events.acquisition(this, this.currentOwner(), leaseTime, signal, (contended) =>
      // Spelled out, not spread: an object spread costs more than the rest of the call's bookkeeping.
      this.acquireHold(waitTime, leaseTime, signal, {
        body: how.body,
        quiet: how.quiet,
        failFast: how.failFast,
        onHeldElsewhere: contended,
      }),
    );
  }

  /**
   * Takes the lock for the current owner; false when waitTime passed first. A sibling branch of
   * the owner inside the lock is waited for here first (see OwnerGates), within the same waitTime.
   * Not async, as lock(): a free lock is taken by a chain of continuations over one Acquisition,
   * and only a wait (the gate's, or for another holder) suspends a frame.
   */
  private acquireHold(
    waitTime: number,
    leaseTime: number,
    signal?: AbortSignal,
    how: AcquireHow = NO_HOW,
  ): Promise<false | Acquired> {
    const { context } = this;
    const startedAt = performance.now();
    let acquisition: Acquisition;
    let admitted: GateEntry | Promise<GateEntry | undefined>;
    try {
      this.throwIfClosed();
      signal?.throwIfAborted();
      const owner = this.currentOwner();
      const frame = this.currentFrame();
      this.noticeOverdueLease(owner);
      const leaseMs = leaseTime < 0 ? context.watchdogTimeout : leaseTime;
      acquisition = new Acquisition(
        this,
        context.calls,
        owner,
        leaseMs,
        leaseTime,
        signal,
        how,
        this.holderObject(),
      );
      admitted = context.gates.enter(this.name, this.gateOwner(owner), frame, how.body ?? frame, {
        deadline: waitTime < 0 ? Infinity : startedAt + waitTime,
        signal,
        closing: context.closing,
      });
    } catch (error) {
      return Promise.reject(error);
    }
    if (!(admitted instanceof Promise)) return this.acquireAdmitted(acquisition, admitted, waitTime);
    return admitted.then(
      (entry) => {
        if (!entry) return false;
        // Whatever the gate took of the wait; a wait that ran out there makes one attempt.
        const waitLeft =
          waitTime <= 0 ? waitTime : Math.max(0, Math.floor(startedAt + waitTime - performance.now()));
        return this.acquireAdmitted(acquisition, entry, waitLeft);
      },
      (error: unknown) => {
        throw closedFor(error, this.name, 'acquire');
      },
    );
  }

  /** acquireHold past the gate: the first attempt, then a wait only if that did not settle it. */
  private acquireAdmitted(
    acquisition: Acquisition,
    entry: GateEntry,
    waitTime: number,
  ): Promise<false | Acquired> {
    const { context } = this;
    acquisition.entry = entry;
    acquisition.waitTime = waitTime;
    context.registry.keepFor(Math.max(acquisition.leaseMs, context.fairLockWaitTimeout));
    try {
      acquisition.signal?.throwIfAborted();
      context.closing.throwIfAborted();
      const first = firstAttemptOf(waitTime, context.calls.commandTimeout, this.wakeSourceFirst);
      acquisition.deadline = first.deadline;
      // A lock seen contended a moment ago is most likely held still: the wait begins at once.
      if (first.kind !== 'try' && this.queuesAtOnce()) return this.waitFor(acquisition, undefined, waitTime);
      return acquisition.firstAttempt(first.kind, first.budget);
    } catch (error) {
      return Promise.reject(this.acquisitionFailed(acquisition, error));
    }
  }

  /** Where an acquisition goes from its first attempt's answer (see AttemptTarget). */
  onFirstAnswer(acquisition: Acquisition, ttl: number | null): false | Acquired | Promise<false | Acquired> {
    const next = afterFirstAnswer(ttl, acquisition.waitTime, acquisition.deadline);
    if (next === null) {
      // Granted just as the caller stopped waiting (abort, close): given back.
      const { closing } = this.context;
      const stopped = acquisition.signal?.aborted
        ? acquisition.signal
        : closing.aborted
          ? closing
          : undefined;
      if (stopped) throw this.acquisitionFailed(acquisition, stopped.reason);
      return this.grant(acquisition, 'attempt');
    }
    return next === false
      ? this.acquisitionEnded(acquisition)
      : this.waitFor(acquisition, next, acquisition.waitTime);
  }

  /** Where an acquisition goes when its first attempt failed (see AttemptTarget). */
  onFirstFailure(acquisition: Acquisition, error: unknown): Promise<false | Acquired> {
    const { waitTime } = acquisition;
    let next: FirstAnswer;
    try {
      next = afterFirstFailure(error, waitTime, acquisition.deadline, acquisition.how.failFast);
    } catch (failure) {
      // The first attempt of a wait may have taken a place when it ran (a writer of a
      // writer-preferring lock): a wait that ends on it (aborted, failing fast) gives the place up,
      // in the background, as a wait that ends later does.
      if (waitTime !== 0 && !this.wakeSourceFirst) this.giveUpInBackground(acquisition.owner);
      throw this.acquisitionFailed(acquisition, failure);
    }
    return this.waitFor(acquisition, next, waitTime);
  }

  /**
   * Whether a wait should listen, and queue (or register as a waiter), with its first attempt: this
   * client saw the lock contended a moment ago (see RecentContention).
   */
  protected queuesAtOnce(): boolean {
    return false;
  }

  /**
   * The wait after a first attempt that did not settle it, or (`first` undefined) a wait that
   * listens before its first attempt (see acquireOrWait).
   */
  private async waitFor(
    acquisition: Acquisition,
    first: FirstAnswer | undefined,
    waitTime: number,
  ): Promise<false | Acquired> {
    const { context } = this;
    const { owner, signal, how } = acquisition;
    const siblings = context.siblingWaits.join(this.name, owner);
    context.contention.note(this.name);
    let outcome: AcquireOutcome = false;
    try {
      outcome = await acquireOrWait({
        attempt: (kind, limits) => acquisition.attempt(kind, limits.budget, limits.signal),
        first,
        listenFirst: first === undefined,
        undoGrant: () => acquisition.undoGrant(),
        openWakeSource: async (limits) => {
          const source = siblings.wrap(await this.openWakeSource(owner, limits));
          return DEBUG ? debugWakeSource(this.name, owner, Promise.resolve(source)) : source;
        },
        wakeSourceFirst: this.wakeSourceFirst,
        giveUp: this.giveUp && ((limits) => this.giveUpWait(owner, siblings, limits)),
        waitTime,
        commandTimeout: context.calls.commandTimeout,
        signal,
        closing: context.closing,
        maxSleep: context.watchdogTimeout,
        onRetry: (error, retryInMs) =>
          context.reportRedisError({ name: this.name, operation: 'acquire', error, retryInMs }),
        failFast: how.failFast,
        onHeldElsewhere: how.onHeldElsewhere,
      });
    } catch (error) {
      throw this.acquisitionFailed(acquisition, error);
    } finally {
      context.siblingWaits.leave(siblings, outcome !== false);
      context.contention.note(this.name);
    }
    return outcome ? this.grant(acquisition, outcome) : this.acquisitionEnded(acquisition);
  }

  /**
   * A wait that may have queued ends without the lock. The owner's place and any hand-off to it are
   * the owner's, not the wait's: they are given up only by its last wait on the lock, and not while
   * it holds the lock (a sibling wait took it; the claim of a hand-off may still be on its way).
   */
  private giveUpWait(owner: string, siblings: SiblingWait, limits: StepLimits): Promise<unknown> {
    const { context } = this;
    if (!context.siblingWaits.leaveWithout(siblings) || context.book.get(this.name, owner)) {
      return Promise.resolve();
    }
    return (this.giveUp as GiveUp).call(this, owner, limits);
  }

  /** Gives up `owner`'s place on the lock (see giveUp) unless another wait of it or a hold keeps it. */
  private giveUpInBackground(owner: string): void {
    const { context } = this;
    if (!this.giveUp || context.siblingWaits.waiting(this.name, owner) || context.book.get(this.name, owner))
      return;
    this.giveUp(owner, { budget: context.calls.commandTimeout }).catch(() => undefined);
  }

  /**
   * The acquisition failed with `error` (returned, for the caller to throw, naming this lock when
   * the client closed): it leaves the gate.
   */
  private acquisitionFailed(acquisition: Acquisition, error: unknown): unknown {
    if (acquisition.entry) this.context.gates.leave(acquisition.entry);
    acquisition.end(false);
    return closedFor(error, this.name, 'acquire');
  }

  /** The wait ended without the lock. */
  private acquisitionEnded(acquisition: Acquisition): false {
    this.acquisitionFailed(acquisition, undefined);
    return false;
  }

  /** The lock is the acquisition's: its hold goes into the book, renewed by the watchdog if asked. */
  private grant(acquisition: Acquisition, outcome: 'attempt' | 'handoff'): Acquired | Promise<Acquired> {
    const { context } = this;
    const { owner, leaseMs, leaseTime, how } = acquisition;
    acquisition.end(true);
    const handoff = outcome === 'handoff';
    // The release that handed the lock over granted it provisionally, unmarked; a fresh latch
    // serves its release, and marks it once confirmed.
    const own = !handoff && acquisition.grantLatch !== undefined;
    const latch = own ? (acquisition.grantLatch as string) : this.newLatch();
    const sentAt = own ? acquisition.grantSentAt : performance.now();
    const token = this.tokenOf(latch);
    const hold: Hold = {
      latch,
      marked: !handoff,
      leaseTime,
      entry: acquisition.entry as GateEntry,
      lockClass: this.constructor as LockClass,
      body: how.body,
      acquiredAt: performance.now(),
      readTimeouts: this.readTimeoutsOf(owner),
      preference: this.preferenceOf(),
    };
    // The lock is the caller's now: its body starts before the confirmation of a hand-off goes out
    // (see confirmSoon), and a failed confirmation is a lost lock.
    if (handoff) this.confirmSoon(owner, leaseMs, hold);
    context.book.add(this.name, owner, hold, sentAt + leaseMs, acquisition.holder, {
      quiet: how.quiet,
      explicit: acquisition.holder === undefined,
    });
    // The client's entry (see ClientRegistry) must outlive this lease too, however long the wait was.
    context.registry.keepFor(leaseMs);
    if (leaseTime < 0) context.watchdog.start();
    // Only with waitForReplicas: an await of nothing costs every acquisition a turn of the queue.
    if (context.replicaAcks) return this.grantReplicated(owner, hold, token);
    return { hold, token };
  }

  /** With waitForReplicas: a hold a failover could lose is not handed out. */
  private async grantReplicated(owner: string, hold: Hold, token: number | undefined): Promise<Acquired> {
    try {
      await this.requireReplicas('acquire');
    } catch (error) {
      // Give it back (without waiting for the replicas a second time), then say why.
      await this.releaseHold(owner, hold, true).catch(() => undefined);
      throw error;
    }
    return { hold, token };
  }

  /** One attempt in Redis, for an Acquisition (see attempt). */
  sendAttempt(owner: string, leaseMs: number, latch: string, kind: AttemptKind): Promise<number | null> {
    return this.attempt(owner, leaseMs, latch, kind);
  }

  /** Withdraws the acquire request of `latch` in the background, for an Acquisition (see withdraw). */
  withdrawInBackground(owner: string, latch: string, leaseMs: number): Promise<void> {
    return this.retry('withdraw', leaseMs, () => this.withdraw(owner, latch, leaseMs));
  }

  /** A withdrawal or release sent until Redis answers it, in the background (see sendUntilAnswered). */
  protected retry(operation: string, lifetimeMs: number, send: () => Promise<unknown>): Promise<void> {
    return sendUntilAnswered(this.context.calls, this.name, operation, performance.now() + lifetimeMs, send);
  }

  /**
   * Confirms a hand-off once the new holder's body has begun (setImmediate: after it ran up to its
   * first wait), not before: the send cost two thirds of the time from the hand-off message to the
   * body. Nothing the body sends first needs it: a re-entry adds its own hold and leaves the
   * hand-off to the confirmation (fair/acquire.lua), and a release gives the unconfirmed hold back
   * as any hold of its owner (its place in the queue with it), after which there is nothing left to
   * confirm.
   */
  private confirmSoon(owner: string, leaseMs: number, hold: Hold): void {
    setImmediate(() => {
      if (this.context.book.get(this.name, owner)?.holds.includes(hold))
        void this.confirm(owner, leaseMs, hold);
    });
  }

  private async confirm(owner: string, leaseMs: number, hold: Hold): Promise<void> {
    let confirmed = true;
    try {
      const confirmHandoff = this.confirmHandoff;
      if (confirmHandoff) confirmed = await confirmHandoff.call(this, owner, leaseMs, hold.latch);
      hold.marked = confirmed;
    } catch (error) {
      // Unanswered in time: the hand-off may have come back meanwhile (a fair one waits
      // fairLockHandoffTimeout for it), so the hold is not counted on. The confirmation is
      // withdrawn: if it runs after all it takes nothing, and if it ran, what it took is given back.
      confirmed = false;
      this.context.reportRedisError({ name: this.name, operation: 'confirm', error });
      void this.withdrawInBackground(owner, hold.latch, leaseMs);
    }
    const entry = this.context.book.get(this.name, owner);
    if (!confirmed && entry) {
      this.context.book.lose(entry, 'handoff-lost', 'the hand-off from the previous holder was lost');
    }
  }

  /** Runs one Redis command of this lock within its budget (see RedisCalls). */
  protected call<T>(operation: string, send: () => Promise<T>, limits?: CallLimits<T>): Promise<T> {
    return this.context.calls.run(this.name, operation, send, limits);
  }

  /** How long the latch of a released hold remembers the release, in ms. */
  private latchLifetime(hold: Hold | undefined): number {
    return hold && hold.leaseTime > 0 ? hold.leaseTime : this.context.watchdogTimeout;
  }

  protected currentOwner(): string {
    const task = currentTask();
    // Outside a task the owner is this handle's, the same string every time.
    if (task === undefined)
      return (this.handleOwnerId ??= ownerIdOf(this.context.clientId, undefined, this.handleOwner));
    return ownerIdOf(this.context.clientId, task, this.handleOwner);
  }

  /**
   * What can still release the current owner's holds: its task, or outside a task this handle.
   * None for an explicit owner id: any task that names it can release them, in any process.
   */
  private holderObject(): object | undefined {
    const task = currentTask();
    if (task?.ownerId !== undefined) return undefined;
    return task?.identity ?? this;
  }

  /**
   * 'closing': close() has begun, so no new acquisition starts (releases and queries still run
   * while close() lets running withLock bodies finish); 'closed': close() is done. The error names
   * this lock and `operation`.
   */
  protected throwIfClosed(stage: 'closing' | 'closed' = 'closing', operation = 'acquire'): void {
    const signal = stage === 'closing' ? this.context.closing : this.context.closed;
    if (signal.aborted) throw closedFor(signal.reason, this.name, operation);
  }
}
