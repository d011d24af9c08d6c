import {
  addressWay,
  clientAddress,
  fairHandoffChannel,
  fairLockKeys,
  type FairLockKeys,
} from '../protocol/keys';
import {
  acquireFairLock,
  tryFairLock,
  confirmFairHandoff,
  forceReleaseFairLock,
  handedOn,
  HANDED_ON,
  leaveFairQueue,
  settleFairHandoff,
  releaseFairLock,
  withdrawFairLock,
  type FairKeys,
  RELEASED_AND_HANDED_ON,
  type PublishCommand,
  type ReleaseAnswer,
  type ReleaseWhich,
} from '../protocol/scripts';
import { UNCONFIRMED_POLL_MS } from '../waiting/pubsub/subscriber';
import { scriptMode, type AttemptKind, type StepLimits, type WakeSource } from '../waiting/acquire-or-wait';
import { BaseLock } from './base/base-lock';
import type { LockContext } from '../context';

/**
 * The share of fairLockHandoffTimeout a hand-off's confirmation may take: the rest is the margin
 * for the message's own way from the release to this client (see FairLock.confirmHandoff).
 */
const PROVISIONAL_SHARE = 0.75;

/**
 * fair/acquire.lua's answer for an attempt that took the lock by taking over a hand-off to its
 * owner, whose message may still be on its way (see FairWaiters.tookHandoff).
 */
const TOOK_HANDOFF = -5;

/** An attempt's answer, whether or not it came in a table (see afterQueuedAttempt). */
function ttlOf(answer: number | [number] | null): number | null {
  return Array.isArray(answer) ? answer[0] : answer;
}

/**
 * The fair lock: waiters acquire in the order they reached Redis, across processes.
 *
 * A waiter's place lives in a Redis queue, kept alive by its client's watchdog timer; a release
 * grants the lock straight to the head of the queue and announces it on the lock's hand-off
 * channel, which only clients waiting on this lock hear, naming the owner: that one waiter holds
 * the lock without another round trip.
 */
export class FairLock extends BaseLock {
  private readonly keys: FairLockKeys;
  protected readonly wakeSourceFirst = true;
  readonly kind = 'fair';

  constructor(context: LockContext, name: unknown) {
    super(context, name);
    this.keys = fairLockKeys(this.name, this.slot);
  }

  private get queueKeys(): FairKeys {
    const { lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts } = this.keys;
    return [lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts];
  }

  /** The lock's keys and a request's latch, as its scripts take them: one array per call. */
  private keysWith(latch: string): [...FairKeys, string] {
    const { lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts } = this.keys;
    return [lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts, latch];
  }

  /** Where this client hears this lock's hand-offs, unprefixed (see fairHandoffChannel). */
  private handoffChannel(publish: PublishCommand): string {
    return fairHandoffChannel(this.keys, this.context.clientId, publish === 'spublish');
  }

  protected attempt(
    owner: string,
    leaseMs: number,
    latch: string,
    kind: AttemptKind,
  ): Promise<number | null> {
    if (kind !== 'look') return this.fullAttempt(owner, leaseMs, latch, kind);
    // Half the arguments of the full script. For waiters queued on a free lock it answers
    // ASK_IN_FULL instead, and the wait's next attempt, a full one, settles whose turn it is (a
    // 'try' alone, tryLock(), sends the full script at once).
    const { lock, queue, redissonQueue } = this.keys;
    return tryFairLock(
      this.context.redis,
      [lock, queue, latch, redissonQueue],
      [leaseMs, owner, this.markOf(latch)],
    );
  }

  protected override queuesAtOnce(): boolean {
    return this.context.contention.recent(this.name);
  }

  /**
   * An attempt by fair/acquire.lua, which may queue the owner (kind 'first', 'queued'), or take
   * over a hand-off that reached it (the copy of an attempt that queued, re-sent after its reply
   * was lost, may run only after the release that handed the lock on). A re-entry, by an owner
   * that holds the lock by this client's count, goes as a 'reenter': it adds a hold of its own and
   * leaves a hand-off not confirmed yet to its confirmation, which this client sends; and if Redis
   * no longer has the owner's hold (forceUnlock, a lease lost unnoticed so far), it queues.
   */
  private fullAttempt(
    owner: string,
    leaseMs: number,
    latch: string,
    kind: AttemptKind,
  ): Promise<number | null> {
    const { context } = this;
    const publish = context.publishCommand();
    // Known after the client's first calls: the attempt goes out without waiting for anything.
    if (typeof publish !== 'string') return publish.then(() => this.fullAttempt(owner, leaseMs, latch, kind));
    const mode = kind !== 'try' && context.book.get(this.name, owner) ? 'reenter' : scriptMode(kind);
    const sentAt = context.fairWaiters.attemptSent();
    const ttl = acquireFairLock(context.redis, this.keysWith(latch), [
      leaseMs,
      owner,
      context.fairLockWaitTimeout,
      mode,
      this.markOf(latch),
      context.fairLockHandoffTimeout,
      clientAddress(this.handoffChannel(publish), context.keyPrefix, addressWay(publish, context.cluster)),
      publish,
    ]);
    // A 'try' only takes a free lock: nothing to do with its answer but to read it.
    return mode === 'try'
      ? ttl.then((answer) => (answer === TOOK_HANDOFF ? this.tookHandoff(owner) : ttlOf(answer)))
      : ttl.then((answer) => this.afterQueuedAttempt(owner, answer, mode, sentAt));
  }

  /** The attempt took the lock by taking over a hand-off to `owner` (see FairWaiters.tookHandoff). */
  private tookHandoff(owner: string): null {
    this.context.fairWaiters.tookHandoff(this.name, owner);
    return null;
  }

  /**
   * rlock's waiters keep a place in Redisson's queue on this name: this client hears a Redisson
   * release that reaches it (on Redisson's channel for that place) while it has waiters here, and
   * one of them looks again then.
   */
  private listenForRedisson(): void {
    const { context, name } = this;
    const channel = this.keys.redissonPlaceChannel;
    void context
      .subscriber(name, { budget: context.calls.commandTimeout })
      .then((subscriber) =>
        subscriber.subscribe(channel, {
          budget: context.calls.commandTimeout,
          lock: name,
          onMessage: () => context.fairWaiters.lookAgainIn(name, 1),
        }),
      )
      .then(
        (subscription) => context.fairWaiters.holdWhileWaiting(name, channel, () => subscription.release()),
        (error: unknown) => context.reportRedisError({ name, operation: 'subscribe', error }),
      );
  }

  /**
   * An attempt that may have queued: the waiter sleeps until told to look again. An answer in a
   * table says that rlock's waiters keep a place in Redisson's queue (Redisson's fair lock shares
   * the name): this client listens where a Redisson release tells that place.
   */
  private afterQueuedAttempt(
    owner: string,
    answer: number | [number] | null,
    mode: 'first' | 'queued' | 'reenter',
    sentAt: number,
  ): number | null {
    if (answer === null) return null;
    if (answer === TOOK_HANDOFF) return this.tookHandoff(owner);
    if (Array.isArray(answer)) this.listenForRedisson();
    const ttl = ttlOf(answer) as number;
    // A re-entry never claims a hand-off, nor does a request withdrawn before it ran (-3): their
    // answers say nothing of one (see markQueued).
    this.context.fairWaiters.markQueued(this.name, owner, mode === 'reenter' || ttl < -1 ? -1 : sentAt);
    this.context.watchdog.start();
    // The holder is watched once per client and lock, not by every waiter (see FairWaiters): this
    // waiter sleeps until it is told to look again.
    this.context.fairWaiters.lookAgainIn(this.name, ttl >= 0 ? ttl : this.context.watchdogTimeout);
    return Infinity;
  }

  protected release(
    owner: string,
    latch: string,
    latchMs: number,
    which: ReleaseWhich,
  ): Promise<ReleaseAnswer> {
    const publish = this.context.publishCommand();
    // Known after the client's first calls: the release goes out without waiting for anything.
    if (typeof publish !== 'string') return publish.then(() => this.release(owner, latch, latchMs, which));
    return releaseFairLock(this.context.redis, this.keysWith(latch), [
      owner,
      latchMs,
      this.context.fairLockHandoffTimeout,
      which,
      this.markOf(latch),
      publish,
    ]);
  }

  /** A release that handed the lock on watches that hand-off (see HandoffWatches). */
  protected override releaseAnswered(answer: ReleaseAnswer): 0 | 1 | null {
    return answer === RELEASED_AND_HANDED_ON ? this.handedOn(1) : answer;
  }

  protected async withdraw(owner: string, latch: string, latchMs: number): Promise<unknown> {
    const answer = await withdrawFairLock(this.context.redis, this.keysWith(latch), [
      owner,
      latchMs,
      this.context.fairLockHandoffTimeout,
      this.markOf(latch),
      await this.context.publishCommand(),
    ]);
    return this.watched(answer);
  }

  protected async forceRelease(): Promise<boolean> {
    const args: [number, PublishCommand] = [
      this.context.fairLockHandoffTimeout,
      await this.context.publishCommand(),
    ];
    return this.watched(await forceReleaseFairLock(this.context.redis, this.queueKeys, args)) === 1;
  }

  /**
   * Sends fair/settle.lua: hands the lock on if a hand-off this client made was never taken up
   * (see HandoffWatches); true when it handed it on again.
   */
  async settleHandoff(): Promise<boolean> {
    const { context } = this;
    const answer = await this.call('settle', async () =>
      settleFairHandoff(context.redis, this.queueKeys, [
        context.fairLockHandoffTimeout,
        await context.publishCommand(),
      ]),
    );
    return handedOn(answer);
  }

  /** This client handed the lock to a waiter: it watches that hand-off (see HandoffWatches). */
  private handedOn<T>(answer: T): T {
    this.context.handoffWatches.handedOn(this.name);
    return answer;
  }

  /** The answer of a script that may have handed the lock on (see HANDED_ON), that flag taken off. */
  private watched(answer: number): number {
    return handedOn(answer) ? this.handedOn(answer - HANDED_ON) : answer;
  }

  /**
   * Hand-offs must be heard before this owner joins the queue: they come on this client's own
   * channel (see fairHandoffChannel: subscribed for the client's lifetime, or with sharded pub/sub
   * while it has waiters on the lock), which the attempt that queues keeps beside the owner's
   * place; a message names the owner it is for. While the channel is not confirmed (Redis
   * unreachable) the waiter looks again every UNCONFIRMED_POLL_MS, so a grant whose message went
   * unheard is still taken. Two waits of one owner on the lock share its place (see FairWaiters).
   */
  protected async openWakeSource(owner: string, limits: StepLimits): Promise<WakeSource> {
    const subscriber = await this.context.subscriber(this.name, limits);
    const channel = this.handoffChannel(await this.context.publishCommand());
    const subscription = await subscriber.subscribe(channel, { ...limits, addressed: true, lock: this.name });
    const waiter = this.context.fairWaiters.register(this.name, owner, this.keys);
    return {
      sleep: (ms, signal) =>
        waiter.sleep(subscription.listening ? ms : Math.min(ms, UNCONFIRMED_POLL_MS), signal),
      interrupt: () => waiter.interrupt(),
      release: () => {
        waiter.release();
        subscription.release();
      },
    };
  }

  /**
   * A wait that gave up leaves the queue. A leave that Redis does not answer in time (an outage) is
   * sent again in the background until it does, as long as the place could live (a waiter timeout):
   * a give-up takes effect once Redis is back, instead of leaving a place that a release would hand
   * the lock to.
   */
  protected override giveUp(owner: string, limits: StepLimits): Promise<unknown> {
    return this.call('giveUp', () => this.leave(owner), {
      ...limits,
      resendUntil: performance.now() + this.context.fairLockWaitTimeout,
    });
  }

  /**
   * Gives back a hand-off this client heard for `owner`, one of its own owners that does not wait on
   * the lock (see FairWaiters): its wait gave up while Redis was out of reach, and a place of it
   * stayed. In the background, until Redis answers.
   */
  giveBackUnclaimed(owner: string): Promise<void> {
    return this.retry('giveUp', this.context.fairLockWaitTimeout, () => this.leave(owner));
  }

  /**
   * Leaves `owner`'s place, giving back a hand-off to it. Sent again after an outage, it leaves
   * nothing once the owner waits on the lock again or holds it: the place is that wait's then.
   */
  private async leave(owner: string): Promise<unknown> {
    const { context } = this;
    if (context.siblingWaits.waiting(this.name, owner) || context.book.get(this.name, owner)) return 0;
    const publish = await context.publishCommand();
    return this.watched(
      await leaveFairQueue(context.redis, this.queueKeys, [owner, context.fairLockHandoffTimeout, publish]),
    );
  }

  /**
   * Confirms a hand-off granted (its message read) at `grantedAt`, while the grant surely lasts:
   * an answer that comes later may come after the hand-off went on. The release's grant lasts
   * fairLockHandoffTimeout from when it ran, before the message came, and the next waiter may
   * hold the lock a moment after it ends: the body that started on the message is told it lost
   * the lock (lockLost 'handoff-lost', its signal aborted) a quarter of that timeout before, not in
   * a tie with the next holder's start. (Within the commandTimeout, when shorter.)
   */
  protected override async confirmHandoff(
    owner: string,
    leaseMs: number,
    latch: string,
    grantedAt: number,
  ): Promise<boolean> {
    const { context } = this;
    const surelyHeldUntil = grantedAt + context.fairLockHandoffTimeout * PROVISIONAL_SHARE;
    // Whole ms, the same on the usual path (sent a tick after the grant): calls with one budget share a queue.
    const budget = Math.max(
      1,
      Math.min(context.calls.commandTimeout, Math.floor(surelyHeldUntil - performance.now())),
    );
    const confirmed = await this.call(
      'confirm',
      () => confirmFairHandoff(context.redis, this.keysWith(latch), [owner, leaseMs, this.markOf(latch)]),
      { budget },
    );
    return confirmed === 1;
  }
}
