import { closedFor } from '../../errors';
import type { Hold, LockClass } from '../../ownership/hold-book';
import { DEBUG } from '../../events';
import { debugWakeSource } from '../../waiting/debug-wake-source';
import type { GateEntry } from '../../ownership/owner-gates';
import type { SiblingWait } from '../../waiting/sibling-waits';
import { parseLockArguments, parseTryLockArguments } from '../../util/validate';
import {
  acquireOrWait,
  afterFirstAnswer,
  afterFirstFailure,
  firstAttemptOf,
  STALE_GRANT,
  staleLookBudget,
  type AcquireOutcome,
  type AttemptKind,
  type FirstAnswer,
  type StepLimits,
} from '../../waiting/acquire-or-wait';
import { Acquisition, type Acquired, type AcquireHow } from './acquisition';
import type { LockOptions, TryLockOptions } from '../types';
import { ReleasingLock } from './releasing-lock';

type GiveUp = (owner: string, limits: StepLimits) => Promise<unknown>;

/** What lock() resolves to, whatever acquire() answered. */
function toVoid(): void {}

/** The options of an acquisition that has none. */
const NO_HOW: AcquireHow = Object.freeze({});

/**
 * How a lock is taken: lock() and tryLock(), through the owner's gate, a first attempt, and the one
 * wait loop (acquireOrWait) when that did not settle it; the grant puts the hold in the book (and a
 * hand-off's confirmation on its way).
 */
export abstract class AcquiringLock extends ReleasingLock {
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
        budget: how.budget,
      }),
    );
  }

  /**
   * Takes the lock for the current owner; false when waitTime passed first. A sibling branch of
   * the owner inside the lock is waited for here first (see OwnerGates), within the same waitTime.
   * Not async, as lock(): a free lock is taken by a chain of continuations over one Acquisition,
   * and only a wait (the gate's, or for another holder) suspends a frame.
   */
  protected acquireHold(
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
  protected acquireAdmitted(
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
      const commandTimeout = Math.min(acquisition.how.budget ?? Infinity, context.calls.commandTimeout);
      const first = firstAttemptOf(waitTime, commandTimeout, this.wakeSourceFirst);
      acquisition.deadline = first.deadline;
      // A lock seen contended a moment ago is most likely held still: the wait begins at once;
      // unless the owner holds it, and this is a re-entry.
      if (first.kind !== 'try' && this.queuesAtOnce() && !context.book.get(this.name, acquisition.owner))
        return this.waitFor(acquisition, undefined, waitTime);
      return acquisition.firstAttempt(first.kind, first.budget);
    } catch (error) {
      return Promise.reject(this.acquisitionFailed(acquisition, error));
    }
  }

  /** Where an acquisition goes from its first attempt's answer (see AttemptTarget). */
  onFirstAnswer(acquisition: Acquisition, ttl: number | null): false | Acquired | Promise<false | Acquired> {
    // A single attempt whose grant came back stale looks once more (see STALE_GRANT); a wait does
    // so in its loop.
    if (ttl === STALE_GRANT && acquisition.waitTime === 0 && !acquisition.lookedAfterStale) {
      acquisition.lookedAfterStale = true;
      // Within a group round's own budget too (see AcquireHow.budget).
      const budget = Math.min(staleLookBudget(this.context.calls), acquisition.how.budget ?? Infinity);
      return acquisition.firstAttempt('try', Math.max(1, budget));
    }
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
   * The wait after a first attempt that did not settle it, or (`first` undefined) a wait that
   * listens before its first attempt (see acquireOrWait).
   */
  protected async waitFor(
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
  protected giveUpWait(owner: string, siblings: SiblingWait, limits: StepLimits): Promise<unknown> {
    const { context } = this;
    if (!context.siblingWaits.leaveWithout(siblings) || context.book.get(this.name, owner)) {
      return Promise.resolve();
    }
    return (this.giveUp as GiveUp).call(this, owner, limits);
  }

  /** Gives up `owner`'s place on the lock (see giveUp) unless another wait of it or a hold keeps it. */
  protected giveUpInBackground(owner: string): void {
    const { context } = this;
    if (!this.giveUp || context.siblingWaits.waiting(this.name, owner) || context.book.get(this.name, owner))
      return;
    this.giveUp(owner, { budget: context.calls.commandTimeout }).catch(() => undefined);
  }

  /**
   * The acquisition failed with `error` (returned, for the caller to throw, naming this lock when
   * the client closed): it leaves the gate.
   */
  protected acquisitionFailed(acquisition: Acquisition, error: unknown): unknown {
    if (acquisition.entry) this.context.gates.leave(acquisition.entry);
    acquisition.end(false);
    return closedFor(error, this.name, 'acquire');
  }

  /** The wait ended without the lock. */
  protected acquisitionEnded(acquisition: Acquisition): false {
    this.acquisitionFailed(acquisition, undefined);
    return false;
  }

  /** The lock is the acquisition's: its hold goes into the book, renewed by the watchdog if asked. */
  protected grant(acquisition: Acquisition, outcome: 'attempt' | 'handoff'): Acquired | Promise<Acquired> {
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
  protected async grantReplicated(owner: string, hold: Hold, token: number | undefined): Promise<Acquired> {
    try {
      await this.requireReplicas('acquire');
    } catch (error) {
      // Give it back (without waiting for the replicas a second time), then say why.
      await this.releaseHold(owner, hold, true).catch(() => undefined);
      throw error;
    }
    return { hold, token };
  }

  /** Whether `owner` holds this lock by this client's count, for an Acquisition (see AttemptTarget). */
  heldBy(owner: string): boolean {
    return this.context.book.get(this.name, owner) !== undefined;
  }

  /** One attempt in Redis, for an Acquisition (see attempt). */
  sendAttempt(owner: string, leaseMs: number, latch: string, kind: AttemptKind): Promise<number | null> {
    return this.attempt(owner, leaseMs, latch, kind);
  }

  /** Withdraws the acquire request of `latch` in the background, for an Acquisition (see withdraw). */
  withdrawInBackground(owner: string, latch: string, leaseMs: number): Promise<void> {
    return this.retry('withdraw', leaseMs, () => this.withdraw(owner, latch, leaseMs));
  }

  /**
   * Confirms a hand-off once the new holder's body has begun, not before: the send cost two thirds
   * of the time from the hand-off message to the body. A grant of a hand-off runs in a microtask
   * (the wait's continuation), and a tick callback queued from one runs once the microtasks are
   * done: after the body's continuation ran up to its first wait. (setImmediate, which waits for the
   * loop's next check phase, cost the step from the message to the body 13 µs more with eight
   * processes on two cores.) Nothing the body sends first needs it: a re-entry adds its own hold
   * and leaves the hand-off to the confirmation (fair/acquire.lua), and a release gives the
   * unconfirmed hold back as any hold of its owner (its place in the queue with it), after which
   * there is nothing left to confirm.
   */
  protected confirmSoon(owner: string, leaseMs: number, hold: Hold): void {
    process.nextTick(() => {
      if (this.context.book.get(this.name, owner)?.holds.includes(hold))
        void this.confirm(owner, leaseMs, hold);
    });
  }

  protected async confirm(owner: string, leaseMs: number, hold: Hold): Promise<void> {
    let confirmed = true;
    try {
      const confirmHandoff = this.confirmHandoff;
      if (confirmHandoff)
        confirmed = await confirmHandoff.call(this, owner, leaseMs, hold.latch, hold.acquiredAt);
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
}
