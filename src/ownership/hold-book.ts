import { LockLostError, type LockLostCode } from '../errors';
import { LockOwnerMap } from './lock-owner-map';
import { ownerLockKey, type Frame } from './owner';
import { STALL_MS } from '../util/timing';
import type { GateEntry, OwnerGates } from './owner-gates';

/**
 * What close() needs of the lock a hold belongs to: a handle that gives the hold back.
 */
export interface HoldReleaser {
  releaseAtClose(ownerId: string, hold: Hold, quiet: boolean): Promise<unknown>;
}

/**
 * The class of the lock a hold belongs to: close() makes a new handle of it, with the client's
 * context (see LockContext), to release through, without keeping the handle that took the hold
 * alive. The book only keeps it: it knows nothing of lock kinds or of the client.
 */
export type LockClass = new (context: never, name: string) => HoldReleaser;

/**
 * What this client believes it holds, per (lock, owner): the holds taken (for their latches and
 * leases), how long the lease surely lasts, and the signals of withLock calls running on it.
 *
 * Redis stays the authority (unlock always asks it); this book exists so that the watchdog knows
 * what to renew, so that a lost lease reaches the holder as an event and an aborted signal, and so
 * that close() can give back what is still held.
 */

export interface Hold {
  /** The latch of the request that took the hold; its release reuses it (see lua/include/holds.lua). */
  readonly latch: string;
  /**
   * Whether Redis marked the hold with its latch: a hand-off's hold is marked once its new holder
   * confirms it. An unmarked hold is released as any hold of its owner.
   */
  marked: boolean;
  /**
   * The lease asked for, in ms; -1 when the watchdog keeps the lease. A group lock's member hold
   * has it set once more, in place, when the group cuts its members to the lease asked (see
   * HoldBook.setLease): whoever took the hold keeps releasing this very object.
   */
  leaseTime: number;
  /** The hold's place in its owner's gate (see OwnerGates), left when the hold ends. */
  readonly entry: GateEntry;
  /** The class of the hold's lock (see LockClass). */
  readonly lockClass: LockClass;
  /**
   * The frame of the withLock body this hold serves, which releases it itself; none for a hold
   * taken by hand (lock(), tryLock()), which unlock() releases.
   */
  readonly body?: Frame;
  /** performance.now() when it was granted (for the hold time of the released event). */
  readonly acquiredAt: number;
  /**
   * For a read lock's hold: the owner's read-hold timeout prefix, which the watchdog renews with
   * the hash (see lua/rwlock/renew.lua). None for the other kinds.
   */
  readonly readTimeouts?: string;
  /**
   * For either half of a read-write lock: the name's writer-preference flag, which the watchdog
   * keeps as long as the hash it renews (see lua/rwlock/renew.lua). None for the other kinds.
   */
  readonly preference?: string;
}

/** A hold taken out of the book for its release (see HoldBook.takeForRelease). */
export interface TakenHold {
  hold: Hold;
  /** False when the hold was no longer in the book: its lease was lost. */
  inBook: boolean;
  /** Its entry, when it was in the book. */
  entry?: HeldLock;
}

export interface LostLease {
  name: string;
  ownerId: string;
  /** Why, as a stable code: see LockLostCode. */
  code: LockLostCode;
  reason: string;
}

export class HeldLock {
  /**
   * Oldest first. Most locks are held once, so it starts as an array of one: a push onto an empty
   * array makes room for 17.
   */
  readonly holds: Hold[];
  /** The running withLock calls on it, aborted when it is lost; made at the first one. */
  guards?: Set<AbortController>;
  /** performance.now() until which Redis surely keeps the lease (the grant was sent before it). */
  leaseEnd = 0;
  /** A watchdog renewal is on its way; the next tick does not pile another on top. */
  renewing = false;
  /** Why the last watchdog renewal failed, until one succeeds (for the reason of a lost lease). */
  renewalError?: unknown;
  /** Held for a group lock, which reports the loss itself (when its quorum is lost). */
  quiet = false;
  /**
   * Held by an explicit owner id (runInTask's ownerId): the hold may be meant to outlive this
   * client (another worker releases it), so close() leaves it in Redis.
   */
  explicit = false;
  expiryTimer?: NodeJS.Timeout;
  /** The next owner's entry of the same lock (see LockOwnerMap). */
  nextOwner: HeldLock | undefined = undefined;

  constructor(
    readonly name: string,
    readonly ownerId: string,
    /** The class of the lock (see LockClass). */
    readonly lockClass: LockClass,
    first: Hold,
  ) {
    this.holds = [first];
  }

  get byWatchdog(): boolean {
    return this.holds.some((hold) => hold.leaseTime < 0);
  }

  /** A read lock's timeout prefix, renewed with its hash (see Hold.readTimeouts). */
  get readTimeouts(): string | undefined {
    return this.holds[0]?.readTimeouts;
  }

  /** A read-write lock's writer-preference flag, kept with its hash (see Hold.preference). */
  get preference(): string | undefined {
    return this.holds[0]?.preference;
  }
}

export class HoldBook {
  private readonly entries = new LockOwnerMap<HeldLock>();
  /**
   * A hold taken by a lock handle outside any task, or by a task, is kept only while that handle
   * or task can still release it. Once it is garbage-collected the hold is orphaned: nothing can
   * unlock it, so the watchdog must not keep it forever.
   */
  private readonly orphans = new FinalizationRegistry<{ name: string; ownerId: string }>(
    ({ name, ownerId }) => {
      const entry = this.get(name, ownerId);
      if (!entry) return;
      // Kept for close(), which gives back what this client still has in Redis.
      this.orphaned.push(entry);
      // Only a watchdog lease would have gone on for ever; a fixed one ends by itself, as meant
      // (a lock never unlocked on purpose, such as a rate window).
      this.lose(
        entry,
        'orphaned',
        'the lock handle or task that held it was garbage-collected without unlocking it; it is no longer ' +
          'renewed and ends with its lease',
        entry.byWatchdog,
      );
    },
  );
  /** Entries whose holder was garbage-collected, until close() releases them. */
  private orphaned: HeldLock[] = [];

  /**
   * How recent entries ended, per (lock, owner), for a clearer LockNotHeldError: lost (why), or
   * given back by a release Redis did not answer, which is being sent again in the background.
   */
  private readonly recentEnds = new Map<string, LockLostCode | 'release-unanswered'>();

  constructor(
    private readonly gates: OwnerGates,
    private readonly onLost: (lost: LostLease) => void,
  ) {}

  /**
   * Records a granted hold; `leaseEnd` is when its lease ends at the earliest. `holder` is the
   * handle or task that can release it (see orphans; none for an explicit owner id). A quiet hold
   * (a group lock's member) aborts its guards when lost, but leaves the lockLost event to the group.
   */
  add(
    name: string,
    ownerId: string,
    hold: Hold,
    leaseEnd: number,
    holder: object | undefined,
    how: { quiet?: boolean; explicit?: boolean } = {},
  ): HeldLock {
    let entry = this.entries.get(name, ownerId);
    if (!entry) {
      if (this.recentEnds.size > 0) this.recentEnds.delete(bookKey(name, ownerId));
      entry = new HeldLock(name, ownerId, hold.lockClass, hold);
      entry.quiet = how.quiet === true;
      entry.explicit = how.explicit === true;
      this.entries.set(name, entry);
      if (holder) this.orphans.register(holder, { name, ownerId }, entry);
    } else {
      entry.holds.push(hold);
    }
    entry.leaseEnd = Math.max(entry.leaseEnd, leaseEnd);
    this.watchExpiry(entry);
    return entry;
  }

  /**
   * `hold`, the entry's only hold, now has this fixed lease, ending at leaseEnd (performance.now()
   * time). The hold is changed in place, not replaced: its release names this very object.
   */
  setLease(entry: HeldLock, hold: Hold, leaseTime: number, leaseEnd: number): void {
    hold.leaseTime = leaseTime;
    entry.leaseEnd = leaseEnd;
    this.watchExpiry(entry);
  }

  get(name: string, ownerId: string): HeldLock | undefined {
    return this.entries.get(name, ownerId);
  }

  isCurrent(entry: HeldLock): boolean {
    return this.entries.get(entry.name, entry.ownerId) === entry;
  }

  /**
   * Takes a hold out of the book before its release is sent, and the whole entry with the last
   * hold, so that no renewal is ever sent for a lock whose release is under way. With `hold` (a
   * withLock releasing its own): that hold, `inBook` false when it is no longer there (its lease
   * was lost). Without (unlock()): the owner's newest hold taken by hand; never a running withLock's.
   * The hold keeps its place in the owner's gate until the caller leaves it, once Redis has the
   * release (a sibling's acquisition must not overtake it).
   */
  takeForRelease(name: string, ownerId: string, hold?: Hold): TakenHold | undefined {
    const entry = this.get(name, ownerId);
    let index = -1;
    if (entry) {
      if (hold) index = entry.holds.lastIndexOf(hold);
      else for (index = entry.holds.length - 1; index >= 0 && entry.holds[index]?.body; index -= 1);
    }
    if (!entry || index < 0) return hold && { hold, inBook: false };
    const [taken] = entry.holds.splice(index, 1) as [Hold];
    if (entry.holds.length === 0) this.drop(entry);
    else this.watchExpiry(entry);
    return { hold: taken, inBook: true, entry };
  }

  /** Whether `ownerId` holds `name` for a withLock body now (unlock() may not take those). */
  heldForBody(name: string, ownerId: string): boolean {
    return this.get(name, ownerId)?.holds.some((hold) => hold.body !== undefined) === true;
  }

  /** Every owner of this client holding `name` (for forceUnlock). */
  holdersOf(name: string): HeldLock[] {
    return this.entries.ofLock(name);
  }

  /** Other owners of this client holding `name`, for a clearer "not held" message. */
  otherHolders(name: string, ownerId: string): string[] {
    return this.holdersOf(name)
      .map((entry) => entry.ownerId)
      .filter((other) => other !== ownerId);
  }

  watchdogHeld(): HeldLock[] {
    return this.entries.values().filter((entry) => entry.byWatchdog);
  }

  all(): HeldLock[] {
    return this.entries.values();
  }

  /** Registers a withLock call on the entry; it is aborted if the lease is lost. */
  guard(entry: HeldLock): AbortController {
    const controller = new AbortController();
    (entry.guards ??= new Set()).add(controller);
    return controller;
  }

  /** Entries whose holder was garbage-collected and whose lease may still run, taken out (close()). */
  takeOrphaned(): HeldLock[] {
    const now = performance.now();
    const live = this.orphaned.filter((entry) => entry.byWatchdog || entry.leaseEnd > now);
    this.orphaned = [];
    return live;
  }

  /** Aborts the running withLock calls on every hold with `error`, keeping the holds (close()). */
  abortGuards(error: (entry: HeldLock) => unknown): void {
    for (const entry of this.entries.values()) {
      for (const guard of entry.guards ?? []) guard.abort(error(entry));
    }
  }

  /** Why the owner's hold on `name` was lost, if it was lately (and not taken again since). */
  lostCodeOf(name: string, ownerId: string): LockLostCode | undefined {
    // Nothing ended lately (the usual case): no key to make.
    if (this.recentEnds.size === 0) return undefined;
    const ended = this.recentEnds.get(bookKey(name, ownerId));
    return ended === 'release-unanswered' ? undefined : ended;
  }

  /** The owner's last release of `name` was not answered; it is being sent again (see protocol/resend.ts). */
  releaseUnanswered(name: string, ownerId: string): void {
    this.remember(bookKey(name, ownerId), 'release-unanswered');
  }

  /** Whether the owner's last release of `name` went unanswered (and nothing was taken since). */
  isReleaseUnanswered(name: string, ownerId: string): boolean {
    return this.recentEnds.size > 0 && this.recentEnds.get(bookKey(name, ownerId)) === 'release-unanswered';
  }

  /** The lease is gone: forget the entry, tell the listeners and abort the running withLock calls. */
  lose(entry: HeldLock, code: LockLostCode, reason: string, announce = true): void {
    if (!this.isCurrent(entry)) return;
    this.drop(entry);
    this.remember(bookKey(entry.name, entry.ownerId), code);
    // A withLock body still runs, told by its signal: siblings wait for it as for any holder; its
    // withLock leaves the gate when it returns. A hold taken by hand leaves now.
    for (const hold of entry.holds) if (!hold.body) this.gates.leave(hold.entry);
    const error = new LockLostError(entry.name, entry.ownerId, code, reason);
    for (const guard of entry.guards ?? []) guard.abort(error);
    // A group member's loss is the group's to report, unless the group is gone with its holder.
    if (announce && (!entry.quiet || code === 'orphaned')) {
      this.onLost({ name: entry.name, ownerId: entry.ownerId, code, reason });
    }
  }

  /**
   * The release of the last hold of `entry` (already out of the book) found nothing in Redis: the
   * lease was lost while it was held, and is known only now.
   */
  lostAtRelease(entry: HeldLock, reason: string): void {
    this.remember(bookKey(entry.name, entry.ownerId), 'not-in-redis');
    if (!entry.quiet) this.onLost({ name: entry.name, ownerId: entry.ownerId, code: 'not-in-redis', reason });
  }

  /** Remembers the newest losses only: enough to explain the unlock() that usually follows. */
  private remember(key: string, code: LockLostCode | 'release-unanswered'): void {
    this.recentEnds.delete(key);
    this.recentEnds.set(key, code);
    if (this.recentEnds.size > RECENT_LOSSES) {
      this.recentEnds.delete(this.recentEnds.keys().next().value as string);
    }
  }

  private drop(entry: HeldLock): void {
    clearTimeout(entry.expiryTimer);
    this.orphans.unregister(entry);
    this.entries.delete(entry.name, entry);
  }

  /**
   * A lock held only with fixed leases ends when they run out. The entry is forgotten then; if a
   * withLock is still running on it, that is a lost lease and the holder is told.
   */
  private watchExpiry(entry: HeldLock): void {
    clearTimeout(entry.expiryTimer);
    entry.expiryTimer = undefined;
    if (entry.byWatchdog) return;
    const delay = Math.max(0, entry.leaseEnd - performance.now());
    entry.expiryTimer = setTimeout(() => {
      this.fixedLeaseOver(entry, performance.now() - entry.leaseEnd > STALL_MS);
    }, delay);
    entry.expiryTimer.unref();
  }

  /**
   * The fixed lease of `entry` ran out: found by its expiry timer, or by the holder's next call
   * before that timer ran. `stoodStill`: that timer was late, the event loop standing still when
   * the lease ended (the holder was not running). Expected, unless a withLock still runs on it.
   */
  fixedLeaseOver(entry: HeldLock, stoodStill: boolean): void {
    this.lose(
      entry,
      'lease-expired',
      stoodStill
        ? 'its lease ran out while the holder was not running (its event loop stood still, or the process was paused)'
        : 'its lease ran out while it was still held',
      (entry.guards?.size ?? 0) > 0,
    );
  }
}

/** How many losses are remembered for the messages of later unlock() calls. */
const RECENT_LOSSES = 1_000;

function bookKey(name: string, ownerId: string): string {
  return ownerLockKey(ownerId, name);
}
