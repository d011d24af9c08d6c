import { onAbort } from '../util/abort';
import { RedisReplyError, RedisUnavailableError } from '../errors';
import { asLockError, isNotWritable, isPassing, mayHaveRun } from './call-errors';
import { Deadlines, type Deadline, type DeadlineQueue } from './deadlines';
import { Readiness, type ReadyWaiter } from './readiness';
import type { RedisConnection } from './connection';
import { retryPause, sharedDelay, STALL_MS } from '../util/timing';

/**
 * Every Redis command rlock sends goes through here, so that each one settles within its budget
 * whatever the server does (slow, paused, unreachable, restarting), and fails with an error that
 * names the lock and the operation.
 *
 * ioredis alone does not bound a call: with default options a command to a dead server fails after
 * ~10 s, with `maxRetriesPerRequest: null` never, and against a paused server it waits until the
 * server resumes, then runs — long after its caller gave up. So a call is raced against its budget
 * (one timer per client, see Deadlines), and an answer that comes after the caller stopped waiting
 * goes to `onLate`, where a grant nobody waits for any more is given back.
 *
 * Nothing is sent while the connection is not ready: the command waits (within its budget) for the
 * connection's 'ready', unless the connection gave up on its commands (see Readiness).
 */
export interface CallLimits<T, R = T> {
  /** How long the caller waits for the answer, in ms. Default: the client's commandTimeout. */
  budget?: number;
  /** Aborting it settles the call at once with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Learns what became of a command the caller could not use: it answered after the call settled
   * without it (timeout, abort, close), or it failed in a way that does not say whether it ran
   * (ioredis' own commandTimeout, a connection that closed after the command was written and will
   * not re-send it). A command that was never sent, or that Redis refused, has no fate to learn.
   */
  onOrphaned?: (fate: Fate<T>) => void;
  /**
   * Learns the answer of a command onOrphaned was told nobody can tell the fate of, when it comes
   * after all: ioredis holds a command written before a reconnect and sends it again once the
   * connection is back, however long that takes, so a command taken as lost may still run, and
   * whatever was done about it (a withdrawal that gave up while Redis was away) may be too early.
   */
  onAnsweredAfterAll?: (value: T) => void;
  /**
   * A command whose outcome must be learned (a release, a withdrawal: see RedisCalls.resend): when
   * the caller is not told whether it ran, it is sent again in the background until this
   * performance.now() time (its window's close). Held by the call itself rather than in closures,
   * as thousands can be in flight.
   */
  resendUntil?: number;
  /**
   * What goes on in the background instead of sending the same command again until resendUntil:
   * a change that settles its request and makes a new one if need be (see changeOnce in protocol/resend.ts).
   */
  sendAgain?: () => Promise<Resent<T>>;
  /**
   * Learns what became of the command once it was sent again in the background (see
   * resendUntil, sendAgain): answered, or given up on.
   */
  onResent?: (outcome: Resent<T>) => void;
  /** Calls of one lane go out one at a time: a call waits until the previous one was answered. */
  lane?: Lane;
  /** A wait's call: close() settles it at once with ClientClosedError. */
  endsWithClose?: boolean;
  /**
   * What the caller gets for an answer that came in time (default: the answer itself). A caller
   * that goes on from the answer does it here rather than in a `then` of the call's promise: one
   * promise, two closures and a reaction fewer per call, which thousands in flight keep alive.
   */
  answered?(value: T): R | PromiseLike<R>;
  /**
   * What the caller gets instead of a failure (default: the failure, as the promise's rejection);
   * it may throw. Run a microtask after the call failed, as a rejection handler would be: never
   * inside the timer, abort or close that failed it.
   */
  failed?(error: unknown): R | PromiseLike<R>;
}

/**
 * What sends a call's command: a function, or an object with a send() method, so that a caller
 * with per-call state (an acquisition's attempt) keeps it in one object instead of closures.
 */
export type Sender<T> = (() => Promise<T>) | { send(): Promise<T> };

/** What became of an orphaned command: it ran and answered `value`, or nobody can tell. */
export type Fate<T> = { ran: true; value: T } | { ran: 'unknown' };

/**
 * What became of a command sent again in the background (see CallLimits.resendUntil). Answered:
 * `value` is the first run's own answer when it came late, else a copy's (`byCopy`), which says
 * what the copy found: after a first run that may have done the work (a request latch makes the
 * copy change nothing then). Not answered: given up on when its window closed, or refused for good.
 */
export type Resent<T> = { answered: true; value: T; byCopy: boolean } | { answered: false; error: unknown };

/** What one step of a wait may take: its budget in ms, and the signal that ends it. */
export interface StepLimits {
  budget: number;
  signal?: AbortSignal;
}

/**
 * One waiter's calls. A waiter whose attempt went unanswered (a paused server) sends its next
 * attempt only after that one is answered, instead of stacking attempts that would all run when
 * the server resumes.
 */
export interface Lane {
  /** The lane's call whose fate is not known yet, if any. */
  unanswered?: { afterAnswer(go: () => void): void };
}

interface PendingCall {
  fail(error: unknown): void;
  readonly endsWithClose: boolean;
}

/** The limits of a call that has none of its own. */
const NO_LIMITS = Object.freeze({});

/** What RedisCalls tells its client about calls nobody waits for (see RedisCalls.resend). */
export interface CallHooks {
  /**
   * A call unanswered is sent again in the background (`retryInMs` 0), or a call re-sent in the
   * background failed for good, or was not answered in its window (no `retryInMs`).
   */
  report?(lock: string, operation: string, error: unknown, retryInMs?: number): void;
  /** A request reached Redis after its window (a LATE reply): the server clock's reading may be off. */
  onLate?(): void;
}

/** A script's answer to a copy of a request that reached Redis after its window (see protocol/resend.ts). */
export function isLate(error: unknown): boolean {
  return error instanceof RedisReplyError && error.replyCode === 'LATE';
}

export class RedisCalls {
  /** When a command may go out (used by CallInFlight). */
  readonly readiness: Readiness;
  /** The calls of waits in flight, which close() settles (used by CallInFlight). */
  readonly waits = new Set<PendingCall>();
  /** The budgets of the calls in flight (used by CallInFlight). */
  readonly deadlines: Deadlines;

  constructor(
    private readonly redis: RedisConnection,
    /** The budget of one call outside a wait, in ms. */
    readonly commandTimeout: number,
    /** Runs fn in the client's async scope (see Deadlines). */
    inClientScope?: <T>(fn: () => T) => T,
    readonly hooks: CallHooks = {},
  ) {
    this.deadlines = new Deadlines(inClientScope);
    this.readiness = new Readiness(redis);
  }

  /**
   * Sends one command for `operation` on lock `lock` once the connection is ready, and settles
   * within the budget with its answer, or rejects with an RLockError (RedisUnavailableError,
   * RedisReplyError) naming the lock and the operation.
   */
  run<T, R = T>(lock: string, operation: string, send: Sender<T>, limits?: CallLimits<T, R>): Promise<R> {
    const given: CallLimits<T, R> = limits ?? NO_LIMITS;
    if (given.signal?.aborted) return settleFailed(given, given.signal.reason);
    return new Promise<R>((resolve, reject) => {
      new CallInFlight(this, lock, operation, send, given, resolve, reject).start();
    });
  }

  /**
   * sendUntilAnswered's loop (see protocol/resend.ts): here, so that a call can start it by itself. Nobody
   * waits for it, so what it cannot settle is reported: a refusal (a LATE copy took no effect), or
   * no answer before `stopAt`. The caller that started it (see CallLimits.onResent) learns what
   * came of it.
   */
  async resend<T>(lock: string, operation: string, stopAt: number, send: Sender<T>): Promise<Resent<T>> {
    const startedAt = performance.now();
    for (let tries = 1; ; tries += 1) {
      let failure: unknown;
      try {
        // Nobody waits for it: a copy waits for its answer as long as there is time (replies may
        // be slower than commandTimeout), and another goes out only after a failure. Rounded (see
        // sharedDelay), as the calls of one budget share a queue of deadlines.
        const budget = Math.max(this.commandTimeout, sharedDelay(stopAt - performance.now()));
        return { answered: true, value: await this.run(lock, operation, send, { budget }), byCopy: true };
      } catch (error) {
        failure = error;
      }
      if (!isPassing(failure)) {
        this.hooks.report?.(lock, operation, failure);
        return { answered: false, error: failure };
      }
      const pause = retryPause(tries);
      if (performance.now() + pause >= stopAt) {
        const detail =
          `sent again for ${Math.round(performance.now() - startedAt)} ms without an answer, until its ` +
          'window closed: it took effect once or not at all, and which is not known';
        const error = new RedisUnavailableError(lock, operation, detail);
        this.hooks.report?.(lock, operation, error);
        return { answered: false, error };
      }
      await new Promise((resolve) => setTimeout(resolve, pause).unref());
    }
  }

  /** Settles every pending call of a wait with `reason` (the client is closing). */
  abortWaits(reason: unknown): void {
    for (const call of [...this.waits]) call.fail(reason);
  }

  status(): string | undefined {
    return this.readiness.status();
  }
}

/**
 * One call in flight: what RedisCalls.run promised, from the wait for a ready connection to the
 * fate of an answer that came too late. One object per call, not a closure per outcome: with
 * thousands of calls in flight, what each keeps alive is what the garbage collector copies.
 */
class CallInFlight<T, R> implements PendingCall, Deadline, ReadyWaiter {
  at: number;
  queue?: DeadlineQueue;
  earlier?: Deadline;
  later?: Deadline;
  readonly endsWithClose: boolean;
  private readonly budget: number;
  private settled = false;
  /** The command went out: from then on, giving up on it leaves a fate to learn. */
  private dispatched = false;
  private fateKnown = false;
  /** onOrphaned was told that nobody can tell whether the command ran (see onAnsweredAfterAll). */
  private toldUnknown = false;
  /** The call settled before the command's answer came: its fate goes to onOrphaned. */
  private settledWithoutIt = false;
  /** Sent again in the background already (see resendInBackground). */
  private resent = false;
  /** Its deadline was moved once for an event loop that stood still (see expire). */
  private stallForgiven = false;
  /** What the call failed with, for the report of its sending again (see resendInBackground). */
  private failure: unknown;
  /** The command's own answer, when it came after the call settled without it. */
  private lateAnswer?: { value: T };
  private grace: NodeJS.Timeout | undefined;
  /** Calls of the lane waiting for this one's fate (see Lane); made for the first of them. */
  private next: Array<() => void> | undefined;
  private waitingForReady = false;
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly calls: RedisCalls,
    private readonly lock: string,
    private readonly operation: string,
    private readonly sender: Sender<T>,
    private readonly limits: CallLimits<T, R>,
    private readonly resolve: (value: R | PromiseLike<R>) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    // Whole ms: a wait's budgets are what is left of it, and calls with one budget share a queue.
    this.budget = Math.ceil(limits.budget ?? calls.commandTimeout);
    this.at = performance.now() + this.budget;
    this.endsWithClose = limits.endsWithClose === true;
  }

  start(): void {
    const { calls } = this;
    calls.deadlines.insert(this.budget, this);
    const { signal } = this.limits;
    if (signal) this.stopListening = onAbort(signal, () => this.fail(signal.reason));
    if (this.endsWithClose) calls.waits.add(this);
    this.waitingForReady = calls.readiness.whenReady(this);
  }

  /** Sends the command (the connection is ready), after the lane's previous one was answered. */
  dispatch(): void {
    if (this.waitingForReady) {
      this.waitingForReady = false;
      this.calls.readiness.forget(this);
    }
    if (this.settled) return;
    const { lane } = this.limits;
    if (lane?.unanswered && lane.unanswered !== this) {
      // Still answered late, maybe: this call goes out after it (while its budget lasts).
      lane.unanswered.afterAnswer(() => this.dispatch());
      return;
    }
    let sent: Promise<T>;
    try {
      const { sender } = this;
      sent = typeof sender === 'function' ? sender() : sender.send();
    } catch (error) {
      return this.failWith(error);
    }
    this.dispatched = true;
    this.fateKnown = false;
    if (lane) lane.unanswered = this;
    sent.then(
      (value) => this.answer(value),
      (error: unknown) => this.refused(error),
    );
  }

  /** The deadline passed: the call fails, saying whether Redis was slow or out of reach. */
  expire(stoodStillMs: number): void {
    if (this.settled) return;
    if (stoodStillMs > STALL_MS && !this.stallForgiven) {
      // The event loop stood still (long synchronous work, a stopped process) while this call
      // waited: it could not read an answer, nor send what was still to go out (a write Node
      // buffered behind another, an auto-pipelined command, the lane's next). The stall took the
      // budget, not Redis: Redis gets that time once more, up to the whole budget.
      this.stallForgiven = true;
      const grace = Math.ceil(Math.min(this.budget, stoodStillMs));
      this.at = performance.now() + grace;
      this.calls.deadlines.insert(grace, this);
      return;
    }
    const status = this.calls.status();
    const budget = Math.round(this.budget);
    const detail =
      status === undefined || status === 'ready'
        ? `Redis did not answer within ${budget} ms`
        : `Redis was not reachable within ${budget} ms (connection ${status})`;
    this.failWith(new RedisUnavailableError(this.lock, this.operation, detail));
  }

  /** Settles the call with `error` as it is (an abort's or close's reason). */
  fail(error: unknown): void {
    if (!this.finish()) return;
    this.failure = error;
    // Not answered in time: it may still run, or never (or was never written); sending it again
    // settles which.
    if (this.resends && isPassing(error)) this.resendInBackground();
    if (this.dispatched && !this.fateKnown) {
      this.settledWithoutIt = true;
      // A command that never settles (a reset connection that ioredis does not re-send) counts
      // as "unknown" after one more commandTimeout.
      if (this.limits.onOrphaned || this.limits.lane || this.resends) {
        this.grace = setTimeout(() => this.learn({ ran: 'unknown' }), this.calls.commandTimeout);
        this.grace.unref();
      }
    }
    if (this.limits.failed) this.resolve(settleFailed(this.limits, error));
    else this.reject(error);
  }

  /** Settles the call with the error a caller sees for `error` (see asLockError). */
  failWith(error: unknown): void {
    const failure = asLockError(error, this.lock, this.operation);
    // Answered in time, yet after its window: the reading of the server's clock is off. (A copy
    // whose caller gave up may well arrive late: that says nothing about the clock.)
    if (!this.settled && isLate(failure)) this.calls.hooks.onLate?.();
    this.fail(failure);
  }

  private answer(value: T): void {
    const inTime = this.finish();
    // The truth about a command sent again meanwhile, however late (see resendInBackground).
    if (!inTime && this.resent) this.lateAnswer = { value };
    if (this.toldUnknown) this.limits.onAnsweredAfterAll?.(value);
    // Learned first: a caller that goes on from the answer (see CallLimits.answered) may send the
    // lane's next call at once.
    this.learn({ ran: true, value });
    if (!inTime) return;
    const { limits } = this;
    if (!limits.answered) this.resolve(value as unknown as R);
    else {
      try {
        this.resolve(limits.answered(value));
      } catch (error) {
        this.reject(error);
      }
    }
  }

  private refused(error: unknown): void {
    // Never written: the connection dropped between the check and the write, or before ioredis
    // noticed (its status still says ready). Wait for it to be ready again, within the budget.
    if (!this.settled && isNotWritable(error) && this.calls.status() !== undefined) {
      this.dispatched = false;
      this.learn(undefined);
      this.waitingForReady = this.calls.readiness.whenReady(this, true);
      return;
    }
    // Written, then cut off or timed out by ioredis: it may run yet, or have run.
    const ambiguous = mayHaveRun(error);
    if (!this.settled && ambiguous) this.settledWithoutIt = true;
    this.failWith(error);
    this.learn(ambiguous ? { ran: 'unknown' } : undefined);
  }

  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    const { calls } = this;
    calls.deadlines.cancel(this);
    this.stopListening?.();
    if (this.waitingForReady) calls.readiness.forget(this);
    if (this.endsWithClose) calls.waits.delete(this);
    return true;
  }

  /** Runs `go` once this call's fate is known (at once if it is): the lane's next call. */
  afterAnswer(go: () => void): void {
    if (this.fateKnown) queueMicrotask(go);
    else (this.next ??= []).push(go);
  }

  /** What became of a dispatched command, learned once: to onOrphaned, and to the lane. */
  private learn(fate: Fate<T> | undefined): void {
    if (this.fateKnown) return;
    this.fateKnown = true;
    if (this.grace) clearTimeout(this.grace);
    const { lane } = this.limits;
    if (lane?.unanswered === this) lane.unanswered = undefined;
    const next = this.next;
    this.next = undefined;
    // A microtask later, as the lane's next call went out before: not inside this call's answer.
    if (next) for (const go of next) queueMicrotask(go);
    if (!fate || !this.settledWithoutIt) return;
    this.toldUnknown = fate.ran === 'unknown';
    this.limits.onOrphaned?.(fate);
    if (fate.ran === 'unknown' && this.resends) this.resendInBackground();
  }

  /** Whether the command goes on in the background when its caller is not told whether it ran. */
  private get resends(): boolean {
    return this.limits.resendUntil !== undefined || this.limits.sendAgain !== undefined;
  }

  /**
   * Sends the command again until answered (see CallLimits.resendUntil), or hands it to sendAgain,
   * once per call; says so (the caller got an error, yet the work goes on), and tells onResent what
   * came of it.
   */
  private resendInBackground(): void {
    if (this.resent) return;
    this.resent = true;
    const { calls, limits, lock, operation } = this;
    calls.hooks.report?.(lock, operation, this.failure, 0);
    // sendAgain's outcome is the change's own (its settlement knows what the first run did).
    if (limits.sendAgain) {
      void limits.sendAgain().then((outcome) => limits.onResent?.(outcome));
      return;
    }
    void calls.resend(lock, operation, limits.resendUntil as number, this.sender).then((outcome) => {
      // The first run's own answer, when it came, says what happened; a copy only what it found.
      const late = this.lateAnswer;
      limits.onResent?.(late ? { answered: true, value: late.value, byCopy: false } : outcome);
    });
  }
}

export { asLockError, connectionGaveUp, isPassing } from './call-errors';

/** A failed call's outcome: the failure, or what `limits.failed` makes of it a microtask later. */
function settleFailed<T, R>(limits: CallLimits<T, R>, error: unknown): Promise<R> {
  const { failed } = limits;
  const failure = Promise.reject(error);
  return failed ? failure.catch((reason: unknown) => failed.call(limits, reason)) : failure;
}
