import type { LockLostCode } from '../../errors';
import type { Hold, TakenHold } from '../../ownership/hold-book';
import { currentTask } from '../../ownership/owner';
import { isPassing, type Resent } from '../../redis/redis-calls';
import {
  changeOnce,
  openWindow,
  settleByLatch,
  windowLength,
  type Change,
  type RequestWindow,
} from '../../protocol/resend';
import type { ReleaseAnswer } from '../../protocol/scripts';
import { LockHandle } from './lock-handle';

/**
 * How a hold is given back: unlock(), close()'s release, forceUnlock(); a release Redis does not
 * answer is sent again in the background until it does, and what it answered is told to the book
 * and the events.
 */
export abstract class ReleasingLock extends LockHandle {
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
  protected releaseHold(owner: string, hold?: Hold, quiet = false): Promise<void> {
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
  protected afterRelease(
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
  protected releasedInBackground(
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
  protected async releaseLostHold(
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
  protected releaseAnyHold(
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
  protected async releaseUnknownHold(owner: string): Promise<void> {
    const result = this.releaseAnswered(
      await this.releaseAnyHold(owner, this.newLatch(), this.context.watchdogTimeout),
    );
    if (result === null) throw this.notHeld(owner, undefined);
    if (this.context.events.observes('released'))
      this.context.events.released(this, owner, undefined, result === 1);
  }

  async forceUnlock(): Promise<boolean> {
    this.throwIfClosed('closed', 'forceUnlock');
    for (const entry of this.context.book.holdersOf(this.name)) {
      this.context.book.lose(entry, 'force-unlocked', 'forceUnlock() deleted it');
    }
    return this.call('forceUnlock', () => this.forceRelease());
  }

  /** close(): gives back `hold` of `owner`, so that waiters elsewhere take over at once. */
  async releaseAtClose(owner: string, hold: Hold, quiet: boolean): Promise<void> {
    await this.releaseHold(owner, hold, quiet).catch(() => undefined);
  }
}
