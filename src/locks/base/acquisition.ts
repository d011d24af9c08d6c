import { DEBUG, debug, type LockKind } from '../../events';
import type { Frame } from '../../ownership/owner';
import type { GateEntry } from '../../ownership/owner-gates';
import type { CallLimits, Fate, Lane, RedisCalls } from '../../redis/redis-calls';
import { STALE_GRANT, type AttemptKind } from '../../waiting/acquire-or-wait';
import type { Hold } from '../../ownership/hold-book';

/** What one acquisition took: its hold in the book, and its fencing token for kinds that issue them. */
export interface Acquired {
  hold: Hold;
  token?: number;
}

/** What an acquisition asks of the lock it takes (AcquiringLock). */
export interface AttemptTarget {
  readonly name: string;
  readonly kind: LockKind;
  /** A fresh latch key for one acquire request. */
  newLatch(): string;
  /** One attempt in Redis: null when acquired or re-entered, else the holder's remaining ttl in ms. */
  sendAttempt(owner: string, leaseMs: number, latch: string, kind: AttemptKind): Promise<number | null>;
  /** Withdraws the acquire request of `latch` in the background, until Redis answers. */
  withdrawInBackground(owner: string, latch: string, leaseMs: number): Promise<void>;
  /** Whether `owner` holds the lock by this client's count: an attempt of it is a re-entry. */
  heldBy(owner: string): boolean;
  /** Where the acquisition goes from its first attempt's answer: taken, not taken, or a wait. */
  onFirstAnswer(acquisition: Acquisition, ttl: number | null): Outcome | Promise<Outcome>;
  /** Where it goes when its first attempt failed (a wait, while time is left); may throw. */
  onFirstFailure(acquisition: Acquisition, error: unknown): Promise<Outcome>;
}

/** What an acquisition ends with, as the lock reports it (false: not taken in time). */
type Outcome = false | Acquired;

/** How an acquisition runs, besides its times (for withLock and group locks). */
export interface AcquireHow {
  /** The frame the holder's code will run in (a withLock body); default: the caller's. */
  body?: Frame;
  /** A group member: a lost lease is the group's to report. */
  quiet?: boolean;
  /** Fail at the first Redis error instead of trying again while time is left. */
  failFast?: boolean;
  /** Told when Redis first answers that another owner holds the lock. */
  onHeldElsewhere?: () => void;
  /**
   * The budget of the attempt of a single-attempt acquisition (waitTime 0), in ms, when less than
   * commandTimeout: a group's round made at the end of the group's wait, which answers within the
   * wait's slack.
   */
  budget?: number;
}

/** What an attempt answers without being sent, when an earlier one's late grant was adopted. */
const ADOPTED = Symbol('adopted');

/**
 * One acquisition of a lock, from its place in the owner's gate to its grant: who asks, for how
 * long, and what its attempts learned. One object instead of a suspended async frame and the
 * closures around it: with thousands of acquisitions in flight, what each keeps alive is what the
 * garbage collector copies.
 *
 * It is also the wait's lane (see Lane): its attempts go out one at a time, so that an attempt a
 * paused server never answered is not followed by a pile of others that would all run when it
 * resumes.
 */
export class Acquisition implements Lane {
  unanswered?: Lane['unanswered'];
  /** Its place in the owner's gate, once admitted. */
  entry?: GateEntry;
  /** The latch of the grant this wait holds: its own attempt's, or a late one it adopted. */
  grantLatch?: string;
  /** performance.now() when the granting attempt was sent (its lease runs from then). */
  grantSentAt = 0;
  /**
   * Until the wait ends, an attempt that answers late with a grant is adopted (the next attempt
   * is not sent); after, it is withdrawn.
   */
  waiting = true;
  /** performance.now() time at which the wait ends (Infinity: never), once the first attempt went out. */
  deadline = Infinity;
  /** How long the acquisition may wait once past the owner's gate, in ms (-1: without limit). */
  waitTime = -1;
  /** Whether a single attempt made its one look after a stale grant (see STALE_GRANT). */
  lookedAfterStale = false;
  /** Latches of attempts that took the lock after all, withdrawn once the wait is over. */
  private grantsAfterAll?: string[];

  constructor(
    readonly lock: AttemptTarget,
    readonly calls: RedisCalls,
    readonly owner: string,
    /** The lease asked for in Redis, in ms (the watchdog's timeout when leaseTime is -1). */
    readonly leaseMs: number,
    /** The lease asked for, in ms; -1 when the watchdog keeps the lease. */
    readonly leaseTime: number,
    readonly signal: AbortSignal | undefined,
    readonly how: AcquireHow,
    /** What can still release the hold (see HoldBook.add); none for an explicit owner id. */
    readonly holder: object | undefined,
  ) {}

  /** One attempt of this wait; an earlier one's late grant, once adopted, answers for it. */
  attempt(kind: AttemptKind, budget: number, signal: AbortSignal | undefined): Promise<number | null> {
    if (this.adoptedGrantHolds()) return Promise.resolve(null);
    const call = new AttemptCall(this, kind, budget, signal);
    return this.calls.run(this.lock.name, 'acquire', call, call);
  }

  /**
   * The acquisition's first attempt, and where it goes from there (see AttemptTarget.onFirstAnswer):
   * the call's answer carries the acquisition on, without a promise chained to it.
   */
  firstAttempt(kind: AttemptKind, budget: number): Promise<Outcome> {
    const call = new FirstAttemptCall(this, kind, budget, this.signal);
    return this.calls.run(this.lock.name, 'acquire', call, call);
  }

  /**
   * Whether a late grant this wait adopted is still one to take: adopted when its answer came, it
   * is taken at the wait's next attempt, which may come after its lease ran out (a retry pause, a
   * subscription, a stalled loop). A lapsed one is given back, and the attempt goes out.
   */
  adoptedGrantHolds(): boolean {
    const latch = this.grantLatch;
    if (latch === undefined) return false;
    if (this.canTake(this.grantSentAt)) return true;
    this.grantLatch = undefined;
    this.giveBack(latch);
    return false;
  }

  /**
   * Whether a grant of an attempt sent at `sentAt` can be handed on now: some of the lease it asked
   * for is left (it runs from the send, as the hold's does in the book, see AcquiringLock.grant;
   * Redis started it no earlier), or it is a re-entry, which the owner's hold keeps alive.
   */
  canTake(sentAt: number): boolean {
    return performance.now() - sentAt < this.leaseMs || this.lock.heldBy(this.owner);
  }

  /** Withdraws the request of `latch` in the background: whatever it took goes back. */
  giveBack(latch: string): void {
    void this.lock.withdrawInBackground(this.owner, latch, this.leaseMs);
  }

  /** The wait is over; a grant it adopted but did not take (time out, error) is given back. */
  end(took: boolean): void {
    this.waiting = false;
    if (!took) void this.undoGrant();
    const latches = this.grantsAfterAll;
    if (!latches) return;
    this.grantsAfterAll = undefined;
    // After the confirmation of a hand-off that ended the wait: it is sent on the next tick, and
    // must reach Redis first (see withdrawAfterAll).
    setImmediate(() => {
      for (const latch of latches) this.giveBack(latch);
    });
  }

  /**
   * Withdraws, once more, the request of an attempt taken as lost that took the lock after all
   * (ioredis sent it again after a reconnect), whose first withdrawal may have run before it, or
   * given up while Redis was away. Never adopted: a withdrawal still under way may yet give the
   * grant back. A second withdrawal changes nothing the first did (the latch says 'w'; no mark, no
   * hold). While the wait goes on, it waits for its end: a fair lock's attempt may have claimed a
   * hand-off to this owner whose message is still on its way, and the wait that takes it holds
   * the lock through that claim until its confirmation adds a hold of its own; withdrawn before,
   * the claim would free the lock under the new holder.
   */
  withdrawAfterAll(latch: string): void {
    if (this.waiting) (this.grantsAfterAll ??= []).push(latch);
    else this.giveBack(latch);
  }

  /** Gives back this wait's grant, if it has one (the caller stopped waiting as it came). */
  undoGrant(): Promise<unknown> {
    const latch = this.grantLatch;
    if (latch === undefined) return Promise.resolve();
    return this.lock.withdrawInBackground(this.owner, latch, this.leaseMs);
  }
}

/**
 * One attempt's call: the command to send and what to do with its answer, whether it comes in
 * time or late (see CallLimits). Its own object, as the acquisition is, instead of closures.
 */
abstract class AttemptCallBase {
  readonly latch: string;
  /** performance.now() when the attempt went out (the lease it asks for runs from then at the earliest). */
  sentAt = 0;
  readonly endsWithClose = true;

  constructor(
    protected readonly acquisition: Acquisition,
    private readonly kind: AttemptKind,
    readonly budget: number,
    readonly signal: AbortSignal | undefined,
  ) {
    this.latch = acquisition.lock.newLatch();
  }

  get lane(): Lane {
    return this.acquisition;
  }

  send(): Promise<number | null | typeof ADOPTED> {
    const { acquisition } = this;
    // An earlier attempt's late grant may have been adopted while this one waited its turn.
    if (acquisition.adoptedGrantHolds()) return Promise.resolve(ADOPTED);
    // Not when the call was made: it may have waited for a ready connection, or its lane.
    if (this.sentAt === 0) this.sentAt = performance.now();
    return acquisition.lock.sendAttempt(acquisition.owner, acquisition.leaseMs, this.latch, this.kind);
  }

  /** What an answer in time says (null: this wait holds the lock), once recorded. */
  protected took(ttl: number | null | typeof ADOPTED): number | null {
    if (ttl === ADOPTED) return null;
    const { acquisition } = this;
    if (ttl === null && !acquisition.canTake(this.sentAt)) {
      // The answer was read after the lease it asked for had run out (the process stood still
      // in between, or Redis kept it): the hold is gone or about to go, and another owner may
      // hold the lock already. Given back, and the wait looks once more (see STALE_GRANT). The
      // look may reach Redis before the withdrawal: finding the stale hold still there, it counts
      // as a re-entry with a fresh lease, and the withdrawal, which goes by this attempt's mark,
      // takes only the stale hold away.
      acquisition.giveBack(this.latch);
      ttl = STALE_GRANT;
    } else if (ttl === null) this.grant();
    if (DEBUG) {
      const { lock } = acquisition;
      debug(
        '%s %s: attempt (%s) by %s: %s',
        lock.kind,
        lock.name,
        this.kind,
        acquisition.owner,
        ttl ?? 'acquired',
      );
    }
    return ttl;
  }

  /**
   * An attempt the wait gave up on (no answer in time, ioredis timed it out, the connection cut
   * it off). If it turns out to have acquired while the wait still waits, the hold is the wait's:
   * it is adopted, and the next attempt is not sent. Otherwise it is withdrawn, so that whatever
   * it took, or would take when it runs later, is given back.
   */
  onOrphaned(fate: Fate<number | null | typeof ADOPTED>): void {
    if (fate.ran === true && fate.value !== null) return;
    const { acquisition } = this;
    if (
      fate.ran === true &&
      acquisition.waiting &&
      acquisition.grantLatch === undefined &&
      acquisition.canTake(this.sentAt)
    ) {
      this.grant();
      return;
    }
    acquisition.giveBack(this.latch);
  }

  /** An attempt taken as lost ran after all and took the lock: see Acquisition.withdrawAfterAll. */
  onAnsweredAfterAll(ttl: number | null | typeof ADOPTED): void {
    if (ttl === null) this.acquisition.withdrawAfterAll(this.latch);
  }

  private grant(): void {
    this.acquisition.grantLatch = this.latch;
    this.acquisition.grantSentAt = this.sentAt;
  }
}

type AttemptAnswer = number | null | typeof ADOPTED;

/** An attempt of a wait: the caller gets the ttl it answered (null: acquired). */
class AttemptCall extends AttemptCallBase implements CallLimits<AttemptAnswer, number | null> {
  answered(ttl: AttemptAnswer): number | null {
    return this.took(ttl);
  }
}

/** The first attempt's call, whose answer carries the acquisition on (see Acquisition.firstAttempt). */
class FirstAttemptCall extends AttemptCallBase implements CallLimits<AttemptAnswer, Outcome> {
  answered(ttl: AttemptAnswer): Outcome | Promise<Outcome> {
    return this.acquisition.lock.onFirstAnswer(this.acquisition, this.took(ttl));
  }

  failed(error: unknown): Promise<Outcome> {
    return this.acquisition.lock.onFirstFailure(this.acquisition, error);
  }
}
