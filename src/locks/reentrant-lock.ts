import {
  addressWay,
  clientAddress,
  lockKeys,
  lockWaitersKey,
  lockWakeChannel,
  type LockKeys,
} from '../protocol/keys';
import type { Subscription } from '../waiting/pubsub/subscriber';
import {
  acquireLock,
  forceReleaseLock,
  handedOn,
  passOnLockWakeup,
  releaseLock,
  waitForLock,
  withdrawLock,
  type PublishCommand,
  RELEASED_AND_HANDED_ON,
  type ReleaseAnnouncement,
  type ReleaseAnswer,
  type ReleaseWhich,
} from '../protocol/scripts';
import type { AttemptKind, StepLimits, WakeSource } from '../waiting/acquire-or-wait';
import type { LockKind } from '../events';
import { BaseLock, type HandleOwner } from './base/base-lock';
import type { LockContext } from '../context';

/** The reentrant, non-fair lock: Redisson's RLock protocol and key layout. */
export class ReentrantLock extends BaseLock {
  private readonly keys: LockKeys;
  /** The clients waiting for this lock (see lua/include/lock-waiters.lua). */
  private readonly waitersKey: string;
  protected readonly wakeSourceFirst = false;
  readonly kind: LockKind = 'lock';
  /**
   * Whether this kind's waiters keep an entry among the lock's waiters and are woken one client at
   * a time (see lua/include/lock-waiters.lua), rather than listening on Redisson's channel, where
   * every release wakes a waiter of every process. Kinds with attempts of their own say no.
   */
  protected readonly wokenOneAtATime: boolean = true;

  constructor(context: LockContext, name: unknown, owner?: HandleOwner) {
    super(context, name, owner);
    this.keys = lockKeys(this.name, this.slot);
    this.waitersKey = lockWaitersKey(this.name, this.slot);
  }

  protected attempt(
    owner: string,
    leaseMs: number,
    latch: string,
    kind: AttemptKind,
  ): Promise<number | null> {
    if (kind !== 'queued' || !this.wokenOneAtATime) {
      return acquireLock(this.context.redis, [this.keys.lock, latch], [leaseMs, owner, this.markOf(latch)]);
    }
    const publish = this.context.publishCommand();
    if (typeof publish !== 'string') return publish.then(() => this.attempt(owner, leaseMs, latch, kind));
    const subscriber = this.context.openSubscriber();
    const alone = (subscriber?.holders(this.keys.channel) ?? 0) <= 1 ? '1' : '0';
    return waitForLock(
      this.context.redis,
      [this.keys.lock, latch, this.waitersKey],
      [leaseMs, owner, this.markOf(latch), this.address(publish), alone],
    ).then((answer) => {
      if (!Array.isArray(answer)) return answer;
      // The holder is not an rlock client: only Redisson's channel will announce its release.
      subscriber?.alsoInRedis(this.keys.channel);
      return answer[0];
    });
  }

  /** Where this client hears this lock's wake-ups (see lockWakeChannel), unprefixed. */
  private wakeChannel(publish: PublishCommand): string {
    return lockWakeChannel(this.name, this.context.clientId, publish === 'spublish', this.slot);
  }

  /** This client's address for this lock's wake-ups, as scripts keep it (see clientAddress). */
  private address(publish: PublishCommand): string {
    return clientAddress(
      this.wakeChannel(publish),
      this.context.keyPrefix,
      addressWay(publish, this.context.cluster),
    );
  }

  protected override queuesAtOnce(): boolean {
    return this.wokenOneAtATime && this.context.contention.recent(this.name);
  }

  /** How this kind's releases announce themselves (Redisson's message; see SpinLock). */
  protected announcement(): ReleaseAnnouncement | Promise<ReleaseAnnouncement> {
    return this.context.publishCommand();
  }

  protected release(
    owner: string,
    latch: string,
    latchMs: number,
    which: ReleaseWhich,
  ): Promise<ReleaseAnswer> {
    const publish = this.announcement();
    // Known after the client's first calls: the release goes out without waiting for anything.
    if (typeof publish !== 'string') return publish.then(() => this.release(owner, latch, latchMs, which));
    return releaseLock(
      this.context.redis,
      [this.keys.lock, this.keys.channel, latch, this.waitersKey],
      [owner, latchMs, publish, which, this.markOf(latch)],
    );
  }

  /** A release that woke a waiting client watches that wake-up (see lock/pass-on.lua). */
  protected override releaseAnswered(answer: ReleaseAnswer): 0 | 1 | null {
    return answer === RELEASED_AND_HANDED_ON ? this.wokeWaiter(1) : answer;
  }

  protected async withdraw(owner: string, latch: string, latchMs: number): Promise<unknown> {
    return withdrawLock(
      this.context.redis,
      [this.keys.lock, this.keys.channel, latch, this.waitersKey],
      [owner, latchMs, await this.announcement(), this.markOf(latch)],
    );
  }

  protected async forceRelease(): Promise<boolean> {
    const publish = await this.announcement();
    const keys: [string, string, string] = [this.keys.lock, this.keys.channel, this.waitersKey];
    return (await forceReleaseLock(this.context.redis, keys, [publish])) === 1;
  }

  /**
   * Waiters are woken one client at a time, on the channel this client hears (its own, or with
   * sharded pub/sub its channel in the lock's slot): they wait on the lock's Redisson channel
   * without subscribing it in Redis, unless the holder turns out not to be an rlock client (see
   * attempt). Kinds that are not woken so listen on Redisson's channel, shared per client.
   */
  protected async openWakeSource(_owner: string, limits: StepLimits): Promise<WakeSource> {
    const subscriber = await this.context.subscriber(this.name, limits);
    if (!this.wokenOneAtATime) return subscriber.subscribe(this.keys.channel, { ...limits, lock: this.name });
    const wakes = this.wakeChannel(await this.context.publishCommand());
    const via = await subscriber.subscribe(wakes, { ...limits, addressed: true, lock: this.name });
    let local: Subscription;
    try {
      local = await subscriber.subscribe(this.keys.channel, { ...limits, via: wakes, lock: this.name });
    } catch (error) {
      via.release();
      throw error;
    }
    return {
      sleep: (ms, signal) => local.sleep(ms, signal),
      interrupt: () => local.interrupt(),
      release: () => {
        local.release();
        via.release();
      },
    };
  }

  /**
   * A wake-up came for this lock and this client has no wait on it any more: it goes on to the
   * client that has waited longest (in the background, until Redis answers).
   */
  passOnWakeup(): Promise<void> {
    return this.retry('passOn', this.context.watchdogTimeout, async () => {
      const own = this.address(await this.context.publishCommand());
      return passOnLockWakeup(this.context.redis, [this.keys.lock, this.waitersKey], [own]);
    });
  }

  /**
   * Wakes the next waiting client if the one a release of this client woke never took the lock (see
   * HandoffWatches): true when it woke one.
   */
  async settleWakeup(): Promise<boolean> {
    const answer = await this.call('settle', () =>
      passOnLockWakeup(this.context.redis, [this.keys.lock, this.waitersKey], ['']),
    );
    return handedOn(answer);
  }

  /** A release of this client woke a waiting client: it watches that wake-up (see HandoffWatches). */
  private wokeWaiter<T>(answer: T): T {
    this.context.lockWakeups.handedOn(this.name);
    return answer;
  }
}
