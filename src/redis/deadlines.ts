import { markLoop, stoodStillSince, type LoopMark } from '../util/timing';

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
  /** performance.now() time at which it expires. */
  readonly at: number;
  /**
   * Called once it is due, after the I/O of the turn in which its timer fired (see fire): an answer
   * that is already in the socket has been read by then. Cancelling it in between does not stop
   * the call: expire() of something settled does nothing. `stoodStillMs`: how long before, by the
   * timer's account, the event loop stood still (its timer fired late, or the loop never waited
   * for I/O while the timer ran): time in which this client could neither send nor read anything.
   */
  expire(stoodStillMs: number): void;
  /** Kept by Deadlines: the queue it waits in (none once expired or cancelled), and its neighbours. */
  queue?: DeadlineQueue;
  earlier?: Deadline;
  later?: Deadline;
}

/**
 * The pending deadlines of one budget, oldest first, linked through the deadlines themselves:
 * adding and cancelling allocate nothing (a Set per budget did, each time it emptied and filled).
 */
export interface DeadlineQueue {
  first?: Deadline;
  last?: Deadline;
}

export class Deadlines {
  /**
   * @param inClientScope runs the timer's setup in the client's async scope: the timer lives on
   *   from call to call, and made in a caller's scope it would keep that caller's task alive.
   */
  constructor(private readonly inClientScope: <T>(fn: () => T) => T = (fn) => fn()) {}

  /** Budget in ms -> its queue. An emptied queue stays until the timer fires (no churn per call). */
  private readonly queues = new Map<number, DeadlineQueue>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  /** The event loop's accounting when the timer was set (see stoodStillSince). */
  private timerSet: LoopMark = { at: 0 };

  /** Calls `expire` once `budget` ms have passed, unless cancelled first. */
  add(budget: number, expire: (stoodStillMs: number) => void): Deadline {
    return this.insert(budget, { at: performance.now() + budget, expire });
  }

  /** Adds `deadline`, due `budget` ms after it was made (its `at`); an object of the caller's own. */
  insert<D extends Deadline>(budget: number, deadline: D): D {
    let queue = this.queues.get(budget);
    if (!queue) {
      queue = {};
      this.queues.set(budget, queue);
    }
    deadline.queue = queue;
    deadline.earlier = queue.last;
    deadline.later = undefined;
    if (queue.last) queue.last.later = deadline;
    else queue.first = deadline;
    queue.last = deadline;
    if (deadline.at < this.timerAt) this.schedule(deadline.at);
    return deadline;
  }

  /**
   * Takes `deadline` out; nothing when it expired or was cancelled already. The timer stays: when
   * it fires early it finds nothing due and waits for the next head (one wake-up per budget,
   * instead of a timer set and cleared per call).
   */
  cancel(deadline: Deadline): void {
    const { queue } = deadline;
    if (queue) unlink(queue, deadline);
  }

  private schedule(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    // Unref'd: a call in flight keeps the process alive through its connection (socket or
    // reconnect timer), and an idle client must not hold a process open until the timer fires.
    this.timerSet = markLoop();
    const delay = Math.max(0, at - this.timerSet.at);
    this.timer = this.inClientScope(() => setTimeout(() => this.fire(), delay).unref());
  }

  private fire(): void {
    const stoodStill = stoodStillSince(this.timerSet);
    this.timer = undefined;
    this.timerAt = Infinity;
    // setTimeout may fire a little early by performance.now(): what is due within a ms is due.
    const firedAt = performance.now();
    const now = firedAt + 1;
    const due: Deadline[] = [];
    let next = Infinity;
    for (const [budget, queue] of this.queues) {
      for (let deadline = queue.first; deadline; deadline = queue.first) {
        if (deadline.at > now) {
          next = Math.min(next, deadline.at);
          break;
        }
        due.push(deadline);
        unlink(queue, deadline);
      }
      if (!queue.first) this.queues.delete(budget);
    }
    if (next < Infinity) this.schedule(next);
    // Expired after this turn's I/O, not in the timer: when the event loop stood still (synchronous
    // work, a GC pause, a stopped process), the timer and the answers that arrived meanwhile run in
    // one turn, timers first. The poll phase between reads those answers, so an answer that is
    // already here settles its call before the deadline can.
    if (due.length > 0) setImmediate(() => expireAll(due, stoodStill, firedAt));
  }
}

/** Expires `due` (fired at `firedAt`), each told how long the loop stood still before it. */
function expireAll(due: Deadline[], stoodStill: number, firedAt: number): void {
  for (const deadline of due) deadline.expire(Math.max(stoodStill, firedAt - deadline.at));
}

function unlink(queue: DeadlineQueue, deadline: Deadline): void {
  const { earlier, later } = deadline;
  if (earlier) earlier.later = later;
  else queue.first = later;
  if (later) later.earlier = earlier;
  else queue.last = earlier;
  deadline.queue = deadline.earlier = deadline.later = undefined;
}
