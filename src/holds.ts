/**
 * What this client believes it holds, per (lock, owner): the holds taken (for their latches and
 * leases), how long the lease surely lasts, and the signals of withLock calls running on it.
 *
 * Redis stays the authority (unlock always asks it); this book exists so that the watchdog knows
 * what to renew, and so that a lost lease reaches the holder as an event and an aborted signal.
 */

export interface Hold {
  /** The latch key written when the hold was granted; its release reuses it. */
  readonly latch: string;
  /** The lease asked for, in ms; -1 when the watchdog keeps the lease. */
  readonly leaseTime: number;
}

export interface LostLease {
  name: string;
  ownerId: string;
  reason: string;
}

export class HeldLock {
  readonly holds: Hold[] = [];
  readonly guards = new Set<AbortController>();
  /** performance.now() until which Redis surely keeps the lease (the grant was sent before it). */
  leaseEnd = 0;
  /** A watchdog renewal is on its way; the next tick does not pile another on top. */
  renewing = false;
  /** Held for a group lock, which reports the loss itself (when its quorum is lost). */
  quiet = false;
  expiryTimer?: NodeJS.Timeout;

  constructor(
    readonly name: string,
    readonly ownerId: string,
  ) {}

  get byWatchdog(): boolean {
    return this.holds.some((hold) => hold.leaseTime < 0);
  }
}

export class HoldBook {
  private readonly entries = new Map<string, HeldLock>();
  /**
   * Holds whose release Redis did not answer, per (lock, owner): the next unlock() of that owner
   * (or close()) sends the same release again, with the same latch, so it counts once. Kept as
   * long as the latch remembers a release.
   */
  private readonly unreleased = new Map<string, Array<{ hold: Hold; until: number }>>();

  constructor(private readonly onLost: (lost: LostLease) => void) {}

  /**
   * Records a granted hold; `leaseEnd` is when its lease ends at the earliest. A quiet hold (a
   * group lock's member) aborts its guards when lost, but leaves the lockLost event to the group.
   */
  add(name: string, ownerId: string, hold: Hold, leaseEnd: number, quiet = false): HeldLock {
    const key = bookKey(name, ownerId);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = new HeldLock(name, ownerId);
      entry.quiet = quiet;
      this.entries.set(key, entry);
    }
    entry.holds.push(hold);
    entry.leaseEnd = Math.max(entry.leaseEnd, leaseEnd);
    this.watchExpiry(entry);
    return entry;
  }

  /** The newest hold now has this fixed lease, ending at leaseEnd (performance.now() time). */
  setNewestLease(entry: HeldLock, leaseTime: number, leaseEnd: number): void {
    const newest = entry.holds.pop();
    if (!newest) return;
    entry.holds.push({ latch: newest.latch, leaseTime });
    entry.leaseEnd = leaseEnd;
    this.watchExpiry(entry);
  }

  get(name: string, ownerId: string): HeldLock | undefined {
    return this.entries.get(bookKey(name, ownerId));
  }

  isCurrent(entry: HeldLock): boolean {
    return this.entries.get(bookKey(entry.name, entry.ownerId)) === entry;
  }

  /**
   * Takes the newest hold out of the book before its release is sent, and the whole entry with the
   * last hold, so that no renewal is ever sent for a lock whose release is under way.
   */
  takeForRelease(name: string, ownerId: string): Hold | undefined {
    const retry = this.takeUnreleased(name, ownerId);
    if (retry) return retry;
    const entry = this.get(name, ownerId);
    if (!entry) return undefined;
    const hold = entry.holds.pop();
    if (entry.holds.length === 0) this.drop(entry);
    else this.watchExpiry(entry);
    return hold;
  }

  /** A hold whose release went unanswered, for the owner's next unlock() to send again. */
  keepUnreleased(name: string, ownerId: string, hold: Hold, latchMs: number): void {
    // Only after failures: forget what no latch remembers any more, so nothing piles up.
    const now = performance.now();
    for (const [key, list] of this.unreleased) {
      const live = list.filter((kept) => kept.until > now);
      if (live.length === 0) this.unreleased.delete(key);
      else this.unreleased.set(key, live);
    }
    const key = bookKey(name, ownerId);
    const list = this.unreleased.get(key) ?? [];
    list.push({ hold, until: now + latchMs });
    this.unreleased.set(key, list);
  }

  private takeUnreleased(name: string, ownerId: string): Hold | undefined {
    const key = bookKey(name, ownerId);
    const list = this.unreleased.get(key);
    if (!list) return undefined;
    const now = performance.now();
    let kept = list.pop();
    while (kept && kept.until <= now) kept = list.pop();
    if (list.length === 0) this.unreleased.delete(key);
    return kept?.hold;
  }

  /** Every owner of this client holding `name` (for forceUnlock). */
  holdersOf(name: string): HeldLock[] {
    return [...this.entries.values()].filter((entry) => entry.name === name);
  }

  watchdogHeld(): HeldLock[] {
    return [...this.entries.values()].filter((entry) => entry.byWatchdog);
  }

  all(): HeldLock[] {
    return [...this.entries.values()];
  }

  /** Registers a withLock call on the entry; it is aborted if the lease is lost. */
  guard(entry: HeldLock): AbortController {
    const controller = new AbortController();
    entry.guards.add(controller);
    return controller;
  }

  /** The lease is gone: forget the entry, tell the listeners and abort the running withLock calls. */
  lose(entry: HeldLock, reason: string, announce = true): void {
    if (!this.isCurrent(entry)) return;
    this.drop(entry);
    const error = Object.assign(new Error(`lock "${entry.name}" was lost: ${reason}`), {
      code: 'ERR_LOCK_LOST',
    });
    for (const guard of entry.guards) guard.abort(error);
    if (announce && !entry.quiet) this.onLost({ name: entry.name, ownerId: entry.ownerId, reason });
  }

  private drop(entry: HeldLock): void {
    clearTimeout(entry.expiryTimer);
    this.entries.delete(bookKey(entry.name, entry.ownerId));
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
      this.lose(entry, 'its lease ran out while it was still held', entry.guards.size > 0);
    }, delay);
    entry.expiryTimer.unref();
  }
}

function bookKey(name: string, ownerId: string): string {
  return `${ownerId}\u0000${name}`;
}
