import { fairLockKeys, type FairLockKeys } from '../keys';
import {
  acquireFairLock,
  tryFairLock,
  confirmFairHandoff,
  forceReleaseFairLock,
  leaveFairQueue,
  releaseFairLock,
  withdrawFairLock,
  type FairKeys,
  type PublishCommand,
} from '../scripts';
import { UNCONFIRMED_POLL_MS } from '../pubsub';
import { scriptMode, type AttemptKind, type StepLimits, type WakeSource } from '../wait';
import { BaseLock } from './base-lock';
import type { LockContext } from './context';

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
    const { lock, queue, deadlines, marker, handoffChannel } = this.keys;
    return [lock, queue, deadlines, marker, handoffChannel];
  }

  /** The lock's keys and a request's latch, as its scripts take them: one array per call. */
  private keysWith(latch: string): [...FairKeys, string] {
    const { lock, queue, deadlines, marker, handoffChannel } = this.keys;
    return [lock, queue, deadlines, marker, handoffChannel, latch];
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
    const { lock, queue } = this.keys;
    return tryFairLock(this.context.redis, [lock, queue, latch], [leaseMs, owner, this.markOf(latch)]);
  }

  /** An attempt by fair/acquire.lua, which may queue the owner (kind 'first', 'queued'). */
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
    const ttl = acquireFairLock(context.redis, this.keysWith(latch), [
      leaseMs,
      owner,
      context.fairLockWaitTimeout,
      scriptMode(kind),
      publish,
      this.markOf(latch),
    ]);
    // A 'try' only takes a free lock: nothing to do with its answer.
    return kind === 'try' ? ttl : ttl.then((answer) => this.afterQueuedAttempt(owner, answer));
  }

  /** An attempt that may have queued: the waiter sleeps until told to look again. */
  private afterQueuedAttempt(owner: string, ttl: number | null): number | null {
    if (ttl === null) return null;
    this.context.fairWaiters.markQueued(this.name, owner);
    this.context.watchdog.start();
    // The holder is watched once per client and lock, not by every waiter (see FairWaiters): this
    // waiter sleeps until it is told to look again.
    this.context.fairWaiters.lookAgainIn(this.name, ttl >= 0 ? ttl : this.context.watchdogTimeout);
    return Infinity;
  }

  protected release(owner: string, latch: string, latchMs: number, any: boolean): Promise<0 | 1 | null> {
    const publish = this.context.publishCommand();
    // Known after the client's first calls: the release goes out without waiting for anything.
    if (typeof publish !== 'string') return publish.then(() => this.release(owner, latch, latchMs, any));
    return releaseFairLock(this.context.redis, this.keysWith(latch), [
      owner,
      latchMs,
      this.context.fairLockWaitTimeout,
      publish,
      any ? 'any' : 'marked',
      this.markOf(latch),
    ]);
  }

  protected async withdraw(owner: string, latch: string, latchMs: number): Promise<unknown> {
    const publish = await this.context.publishCommand();
    return withdrawFairLock(this.context.redis, this.keysWith(latch), [
      owner,
      latchMs,
      this.context.fairLockWaitTimeout,
      publish,
      this.markOf(latch),
    ]);
  }

  protected async forceRelease(): Promise<boolean> {
    const args: [number, PublishCommand] = [
      this.context.fairLockWaitTimeout,
      await this.context.publishCommand(),
    ];
    return (await forceReleaseFairLock(this.context.redis, this.queueKeys, args)) === 1;
  }

  /**
   * Hand-offs must be heard before this owner joins the queue: they come on the lock's hand-off
   * channel, subscribed while this client has waiters on the lock (one subscription for all of
   * them; a message names the owner it is for). While the channel is not confirmed (Redis
   * unreachable) the waiter looks again every UNCONFIRMED_POLL_MS, so a grant whose message went
   * unheard is still taken. Two waits of one owner on the lock share its place (see FairWaiters).
   */
  protected async openWakeSource(owner: string, limits: StepLimits): Promise<WakeSource> {
    const subscriber = await this.context.subscriber(this.name, limits);
    const subscription = await subscriber.subscribe(this.keys.handoffChannel, { ...limits, addressed: true });
    const waiter = this.context.fairWaiters.register(this.name, owner, this.keys);
    return {
      sleep: (ms, signal) =>
        waiter.sleep(subscription.listening ? ms : Math.min(ms, UNCONFIRMED_POLL_MS), signal),
      release: () => {
        waiter.release();
        subscription.release();
      },
    };
  }

  protected override async giveUp(owner: string): Promise<unknown> {
    const publish = await this.context.publishCommand();
    return leaveFairQueue(this.context.redis, this.queueKeys, [
      owner,
      this.context.fairLockWaitTimeout,
      publish,
    ]);
  }

  protected override async confirmHandoff(owner: string, leaseMs: number, latch: string): Promise<boolean> {
    const publish = await this.context.publishCommand();
    return (
      (await confirmFairHandoff(this.context.redis, this.keysWith(latch), [
        owner,
        leaseMs,
        publish,
        this.markOf(latch),
      ])) === 1
    );
  }
}
