/**
 * The fair-lock hand-offs this client made, each watched until it could have come back.
 *
 * A fair release grants the lock to the next waiter inside its script and tells only that waiter's
 * client. If that client never confirms (its process is gone, or cannot reach Redis), the grant's
 * provisional lease runs out and the lock is free with waiters queued: somebody must hand it on.
 * Whoever made the grant is alive and knows of it, so it is the one that settles it: one
 * fairLockHandoffTimeout later it sends fair/settle.lua, which hands the lock on if the grant was
 * not taken up and changes nothing if it was. (A client that made the grant and died in that time
 * leaves it to the refresh of the waiters' places, every fairLockWaitTimeout / 3.)
 *
 * A busy lock is handed on hundreds of times a second, by the same few clients: a hand-off only
 * notes its time, and one timer per lock settles the latest hand-off once it is old enough. An
 * earlier one needs no settling: a client hands a lock on only after it held it, so the grant
 * before was taken up.
 */

/** Past the hand-off timeout, for the provisional lease to have run out in Redis too. */
const SETTLE_SLACK_MS = 20;

interface Watch {
  /** performance.now() of the latest hand-off. */
  latest: number;
  timer: NodeJS.Timeout;
}

export class HandoffWatches {
  private readonly watches = new Map<string, Watch>();
  private closed = false;

  /**
   * @param handoffTimeout fairLockHandoffTimeout, in ms
   * @param settle         sends fair/settle.lua for lock `name`: true when it handed the lock on
   *                       again (a hand-off to watch in turn)
   */
  constructor(
    private readonly handoffTimeout: number,
    private readonly settle: (name: string) => Promise<boolean>,
  ) {}

  /** This client just handed lock `name` to a waiter. */
  handedOn(name: string): void {
    if (this.closed) return;
    const watch = this.watches.get(name);
    if (watch) {
      watch.latest = performance.now();
      return;
    }
    this.arm(name, performance.now(), this.handoffTimeout + SETTLE_SLACK_MS);
  }

  close(): void {
    this.closed = true;
    for (const watch of this.watches.values()) clearTimeout(watch.timer);
    this.watches.clear();
  }

  private arm(name: string, latest: number, delay: number): void {
    const timer = setTimeout(() => this.due(name), delay);
    timer.unref();
    this.watches.set(name, { latest, timer });
  }

  private due(name: string): void {
    const watch = this.watches.get(name);
    if (!watch) return;
    const left = watch.latest + this.handoffTimeout + SETTLE_SLACK_MS - performance.now();
    if (left > 0) return this.arm(name, watch.latest, left);
    this.watches.delete(name);
    this.settle(name).then(
      (handed) => {
        if (handed) this.handedOn(name);
      },
      // Unanswered: the refresh of the waiters' places hands the lock on instead.
      () => undefined,
    );
  }
}
