import { onAbort } from './abort';
import { RedisReplyError, RedisUnavailableError, RLockError } from './errors';
import { Deadlines, type Deadline, type DeadlineQueue } from './deadlines';
import type { RedisConnection } from './redis';
import { retryPause } from './timing';

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
 * connection's 'ready'. That keeps waiters from piling retries into ioredis' offline queue during
 * an outage, and makes `enableOfflineQueue: false` work: ioredis rejects a command sent while it
 * (re)connects at once.
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
   * A command whose outcome must be learned (a release, a withdrawal: see RedisCalls.resend): when
   * the caller is not told whether it ran, it is sent again in the background for up to this many
   * ms. Held by the call itself rather than in closures, as thousands can be in flight.
   */
  resendFor?: number;
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
 * One waiter's calls. A waiter whose attempt went unanswered (a paused server) sends its next
 * attempt only after that one is answered, instead of stacking attempts that would all run when
 * the server resumes.
 */
export interface Lane {
  /** The lane's call whose fate is not known yet, if any. */
  unanswered?: { afterAnswer(go: () => void): void };
}

/** Reply codes that say "not now" rather than "never": a wait tries again while it has time. */
const PASSING_REPLY_CODES = new Set(['LOADING', 'BUSY', 'MASTERDOWN', 'CLUSTERDOWN', 'TRYAGAIN']);

/** The connection was quit or disconnected by its owner: ioredis will not reconnect it. */
class ConnectionEnded extends Error {
  constructor() {
    super('the connection was closed with quit() or disconnect() (status end) and does not reconnect');
  }
}

/** True for errors worth another try within the same wait: Redis unreachable, slow or busy. */
export function isPassing(error: unknown): boolean {
  if (error instanceof RedisUnavailableError) return !(error.cause instanceof ConnectionEnded);
  return error instanceof RedisReplyError && PASSING_REPLY_CODES.has(error.replyCode);
}

/** ioredis' ways of saying the server could not be reached or did not answer. */
const UNREACHABLE =
  /Connection is closed|Stream isn't writeable|Command timed out|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|EAI_AGAIN|None of startup nodes|Failed to refresh slots cache|Cluster isn't ready|Too many Cluster redirections|max retries per request/i;

/** The error a caller sees for `error`, raised while doing `operation` on lock `lock`. */
export function asLockError(error: unknown, lock: string, operation: string): unknown {
  if (error instanceof RLockError || !(error instanceof Error)) return error;
  if (error.name === 'ReplyError') {
    const replyCode = /^[A-Z]+/.exec(error.message)?.[0] ?? 'ERR';
    return new RedisReplyError(lock, operation, replyCode, error.message, { cause: error });
  }
  if (
    error instanceof ConnectionEnded ||
    error.name === 'MaxRetriesPerRequestError' ||
    error.name === 'ClusterAllFailedError' ||
    UNREACHABLE.test(error.message)
  ) {
    return new RedisUnavailableError(lock, operation, `Redis is unreachable: ${error.message}`, {
      cause: error,
    });
  }
  return error;
}

interface PendingCall {
  fail(error: unknown): void;
  readonly endsWithClose: boolean;
}

/** The limits of a call that has none of its own. */
const NO_LIMITS = Object.freeze({});

export class RedisCalls {
  /** Calls waiting for the connection's next 'ready' (used by CallInFlight). */
  readonly readyWaiters = new Set<() => void>();
  private listening = false;
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
  ) {
    this.deadlines = new Deadlines(inClientScope);
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

  /** sendUntilAnswered's loop (see resend.ts): here, so that a call can start it by itself. */
  async resend(lock: string, operation: string, lifetimeMs: number, send: Sender<unknown>): Promise<void> {
    const until = performance.now() + lifetimeMs;
    for (let tries = 1; ; tries += 1) {
      try {
        await this.run(lock, operation, send);
        return;
      } catch (error) {
        if (!isPassing(error)) return;
      }
      const pause = retryPause(tries);
      if (performance.now() + pause >= until) return;
      await new Promise((resolve) => setTimeout(resolve, pause).unref());
    }
  }

  /** Settles every pending call of a wait with `reason` (the client is closing). */
  abortWaits(reason: unknown): void {
    for (const call of [...this.waits]) call.fail(reason);
  }

  /**
   * Dispatches `call` at once when the connection is ready; otherwise when it is, returning the
   * callback registered for that. Fails it when the connection never will be ready (it was closed
   * by its owner). `unwritable`: the socket refused the call's write, so a 'ready' status is stale
   * (the server closed the socket and ioredis has not noticed yet): the call waits for the next.
   */
  whenReady(call: CallInFlight<unknown, unknown>, unwritable = false): (() => void) | undefined {
    const status = this.status();
    if (status === undefined || (status === 'ready' && !unwritable)) {
      call.dispatch();
      return undefined;
    }
    if (status === 'end') {
      call.failWith(new ConnectionEnded());
      return undefined;
    }
    // lazyConnect: nothing connects until a command is sent, and none will be until it is ready.
    if (status === 'wait')
      (this.redis as { connect?: () => Promise<unknown> }).connect?.().catch(() => undefined);
    this.listen();
    const waiter = (): void => {
      this.readyWaiters.delete(waiter);
      call.dispatch();
    };
    this.readyWaiters.add(waiter);
    return waiter;
  }

  /** One 'ready' listener for every waiting call, not one each (they can be thousands). */
  private listen(): void {
    if (this.listening) return;
    this.listening = true;
    this.redis.on('ready', () => {
      for (const waiter of [...this.readyWaiters]) waiter();
    });
  }

  status(): string | undefined {
    return (this.redis as { status?: string }).status;
  }
}

/**
 * One call in flight: what RedisCalls.run promised, from the wait for a ready connection to the
 * fate of an answer that came too late. One object per call, not a closure per outcome: with
 * thousands of calls in flight, what each keeps alive is what the garbage collector copies.
 */
class CallInFlight<T, R> implements PendingCall, Deadline {
  readonly at: number;
  queue?: DeadlineQueue;
  earlier?: Deadline;
  later?: Deadline;
  readonly endsWithClose: boolean;
  private readonly budget: number;
  private settled = false;
  /** The command went out: from then on, giving up on it leaves a fate to learn. */
  private dispatched = false;
  private fateKnown = false;
  /** The call settled before the command's answer came: its fate goes to onOrphaned. */
  private settledWithoutIt = false;
  /** Sent again in the background already (see resendInBackground). */
  private resent = false;
  private grace: NodeJS.Timeout | undefined;
  /** Calls of the lane waiting for this one's fate (see Lane); made for the first of them. */
  private next: Array<() => void> | undefined;
  private waitingForReady: (() => void) | undefined;
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
    this.waitingForReady = calls.whenReady(this as CallInFlight<unknown, unknown>);
  }

  /** Sends the command (the connection is ready), after the lane's previous one was answered. */
  dispatch(): void {
    this.waitingForReady = undefined;
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
  expire(): void {
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
    // Not answered in time: it may still run, or never (or was never written); sending it again
    // settles which.
    if (this.limits.resendFor !== undefined && isPassing(error)) this.resendInBackground();
    if (this.dispatched && !this.fateKnown) {
      this.settledWithoutIt = true;
      // A command that never settles (a reset connection that ioredis does not re-send) counts
      // as "unknown" after one more commandTimeout.
      if (this.limits.onOrphaned || this.limits.lane || this.limits.resendFor !== undefined) {
        this.grace = setTimeout(() => this.learn({ ran: 'unknown' }), this.calls.commandTimeout);
        this.grace.unref();
      }
    }
    if (this.limits.failed) this.resolve(settleFailed(this.limits, error));
    else this.reject(error);
  }

  /** Settles the call with the error a caller sees for `error` (see asLockError). */
  failWith(error: unknown): void {
    this.fail(asLockError(error, this.lock, this.operation));
  }

  private answer(value: T): void {
    const inTime = this.finish();
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
      this.waitingForReady = this.calls.whenReady(this as CallInFlight<unknown, unknown>, true);
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
    if (this.waitingForReady) calls.readyWaiters.delete(this.waitingForReady);
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
    this.limits.onOrphaned?.(fate);
    if (fate.ran === 'unknown' && this.limits.resendFor !== undefined) this.resendInBackground();
  }

  /** Sends the command again until answered (see CallLimits.resendFor), once per call. */
  private resendInBackground(): void {
    if (this.resent) return;
    this.resent = true;
    const lifetime = this.limits.resendFor as number;
    void this.calls.resend(this.lock, this.operation, lifetime, this.sender as Sender<unknown>);
  }
}

/** A failed call's outcome: the failure, or what `limits.failed` makes of it a microtask later. */
function settleFailed<T, R>(limits: CallLimits<T, R>, error: unknown): Promise<R> {
  const { failed } = limits;
  const failure = Promise.reject(error);
  return failed ? failure.catch((reason: unknown) => failed.call(limits, reason)) : failure;
}

function isNotWritable(error: unknown): boolean {
  return error instanceof Error && /Stream isn't writeable/.test(error.message);
}

/**
 * Whether a command ioredis failed may still have run: every failure but Redis' own answer (a
 * ReplyError: it ran, and refused) and a command that was never written (not writeable).
 */
function mayHaveRun(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name !== 'ReplyError' && !isNotWritable(error) && !(error instanceof ConnectionEnded);
}
