import { closedFor, LockNotHeldError, LockNotReplicatedError, type LockLostCode } from '../../errors';
import type { Hold } from '../../ownership/hold-book';
import type { LockKind as EventKind } from '../../events';
import { holdLatchBase, holdMarkField, homeSlot } from '../../protocol/keys';
import { currentTask, Frame, nextOwnerNumber, ownerIdOf } from '../../ownership/owner';
import type { CallLimits, Resent } from '../../redis/redis-calls';
import { callUntilAnswered, sendUntilAnswered } from '../../protocol/resend';
import {
  RELEASED_AND_HANDED_ON,
  renewLocks,
  type ReleaseAnswer,
  type ReleaseWhich,
} from '../../protocol/scripts';
import { checkLockName } from '../../util/validate';
import type { AttemptKind, StepLimits, WakeSource } from '../../waiting/acquire-or-wait';
import type { LockContext } from '../../context';

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

/**
 * What every lock kind is made of, below how it acquires and releases: its name and keys, who the
 * owner is (a task, or the handle itself), request latches, the protocol a kind supplies (one
 * attempt, one release, a withdrawal, a forced delete, where wake-ups come from), and the calls
 * every layer above makes (budgets, closed checks, replica checks). The layers above, lowest first:
 * ReleasingLock, AcquiringLock, BaseLock.
 */
export abstract class LockHandle {
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
  protected readonly handleOwner: number;
  /** What every hold latch of this lock begins with (see holdLatchBase), once made. */
  protected latchBase?: string;
  /** The owner id of this handle outside a task, once asked for. */
  protected handleOwnerId?: string;
  /** The frame of the handle's own calls outside any task. */
  protected readonly handleFrame: Frame;

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

  protected latchBaseOf(): string {
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
   * `latch`; false when lost. `grantedAt`: performance.now() when the hand-off's message was read.
   */
  protected confirmHandoff?(
    owner: string,
    leaseMs: number,
    latch: string,
    grantedAt: number,
  ): Promise<boolean>;

  /**
   * A release or withdrawal whose outcome must be learned (see callUntilAnswered), sent again for
   * as long as its latch lives at least.
   */
  protected callUntilAnswered<T>(
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
  protected notHeld(owner: string, lost: LockLostCode | undefined): LockNotHeldError {
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
  protected async requireReplicas(operation: 'acquire' | 'release'): Promise<void> {
    if (!this.context.replicaAcks) return;
    const { acknowledged, required } = await this.context.replicaAcks(this.name, this.hashKey);
    if (acknowledged < required)
      throw new LockNotReplicatedError(this.name, operation, acknowledged, required);
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
  protected noticeOverdueLease(owner: string): void {
    const entry = this.context.book.get(this.name, owner);
    if (entry && entry.leaseEnd <= performance.now()) this.context.watchdog.noticeOverdue(entry);
  }

  /**
   * Whether a wait should listen, and queue (or register as a waiter), with its first attempt: this
   * client saw the lock contended a moment ago (see RecentContention).
   */
  protected queuesAtOnce(): boolean {
    return false;
  }

  /** A withdrawal or release sent until Redis answers it, in the background (see sendUntilAnswered). */
  protected retry(operation: string, lifetimeMs: number, send: () => Promise<unknown>): Promise<void> {
    return sendUntilAnswered(this.context.calls, this.name, operation, performance.now() + lifetimeMs, send);
  }

  /** Runs one Redis command of this lock within its budget (see RedisCalls). */
  protected call<T>(operation: string, send: () => Promise<T>, limits?: CallLimits<T>): Promise<T> {
    return this.context.calls.run(this.name, operation, send, limits);
  }

  /** How long the latch of a released hold remembers the release, in ms. */
  protected latchLifetime(hold: Hold | undefined): number {
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
  protected holderObject(): object | undefined {
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
