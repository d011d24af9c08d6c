/**
 * The budgets of a client's Redis calls, on one timer instead of one each.
 *
 * Every call rlock sends is raced against its budget (see RedisCalls), and nearly every call
 * answers long before it: a timer set and cleared per call is pure overhead on the hot path, and
 * thousands of calls in flight would each keep one. Calls with the same budget expire in the
 * order they were made, so each budget is a first-in-first-out queue, and one timer waits for the
 * earliest head of them all.
 */
export interface Deadline {
  readonly at: number;
  readonly expire: () => void;
}

export class Deadlines {
  /**
   * @param inClientScope runs the timer's setup in the client's async scope: the timer lives on
   *   from call to call, and made in a caller's scope it would keep that caller's task alive.
   */
  constructor(private readonly inClientScope: <T>(fn: () => T) => T = (fn) => fn()) {}

  /** Budget in ms -> its pending deadlines, oldest first (a Set keeps insertion order). */
  private readonly queues = new Map<number, Set<Deadline>>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  /** Calls `expire` once `budget` ms have passed, unless cancelled first. */
  add(budget: number, expire: () => void): Deadline {
    const deadline: Deadline = { at: performance.now() + budget, expire };
    let queue = this.queues.get(budget);
    if (!queue) {
      queue = new Set();
      this.queues.set(budget, queue);
    }
    queue.add(deadline);
    if (deadline.at < this.timerAt) this.schedule(deadline.at);
    return deadline;
  }

  cancel(deadline: Deadline, budget: number): void {
    const queue = this.queues.get(budget);
    if (!queue?.delete(deadline)) return;
    // The timer stays: when it fires early it finds nothing due and waits for the next head (one
    // wake-up per budget, instead of a timer set and cleared per call).
    if (queue.size === 0) this.queues.delete(budget);
  }

  private schedule(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    // Unref'd: a call in flight keeps the process alive through its connection (socket or
    // reconnect timer), and an idle client must not hold a process open until the timer fires.
    const delay = Math.max(0, at - performance.now());
    this.timer = this.inClientScope(() => setTimeout(() => this.fire(), delay).unref());
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    // setTimeout may fire a little early by performance.now(): what is due within a ms is due.
    const now = performance.now() + 1;
    const due: Deadline[] = [];
    let next = Infinity;
    for (const [budget, queue] of this.queues) {
      for (const deadline of queue) {
        if (deadline.at > now) {
          next = Math.min(next, deadline.at);
          break;
        }
        due.push(deadline);
        queue.delete(deadline);
      }
      if (queue.size === 0) this.queues.delete(budget);
    }
    if (next < Infinity) this.schedule(next);
    for (const deadline of due) deadline.expire();
  }
}
