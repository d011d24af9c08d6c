import { onAbort } from './abort';
import { RedisReplyError, RedisUnavailableError, RLockError } from './errors';
import { Deadlines } from './deadlines';
import type { RedisConnection } from './redis';

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
export interface CallLimits<T> {
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
  /** Calls of one lane go out one at a time: a call waits until the previous one was answered. */
  lane?: Lane;
  /** A wait's call: close() settles it at once with ClientClosedError. */
  endsWithClose?: boolean;
}

/** What became of an orphaned command: it ran and answered `value`, or nobody can tell. */
export type Fate<T> = { ran: true; value: T } | { ran: 'unknown' };

/**
 * One waiter's calls. A waiter whose attempt went unanswered (a paused server) sends its next
 * attempt only after that one is answered, instead of stacking attempts that would all run when
 * the server resumes.
 */
export interface Lane {
  unanswered?: Promise<unknown>;
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
  endsWithClose: boolean;
}

/** The part of a connection's socket that coalescing uses (see RedisCalls.coalesce). */
interface Corkable {
  cork(): void;
  uncork(): void;
}

export class RedisCalls {
  /** A command went out in this tick already (see coalesce). */
  private tickOpen = false;
  /** The socket held corked until the end of this tick, if any. */
  private corked: Corkable | undefined;
  /** Calls waiting for the connection's next 'ready'. */
  private readonly readyWaiters = new Set<() => void>();
  private listening = false;
  private readonly pending = new Set<PendingCall>();
  private readonly deadlines: Deadlines;

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
  run<T>(lock: string, operation: string, send: () => Promise<T>, limits: CallLimits<T> = {}): Promise<T> {
    const budget = limits.budget ?? this.commandTimeout;
    const { signal, lane } = limits;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let waitingForReady: (() => void) | undefined;
      /** The command went out: from then on, giving up on it leaves a fate to learn. */
      let dispatched = false;
      let fateKnown = false;
      let grace: NodeJS.Timeout | undefined;
      let answered: (() => void) | undefined;
      /** What became of a dispatched command, learned once: to onOrphaned, and to the lane. */
      const learn = (fate: Fate<T> | undefined): void => {
        if (fateKnown) return;
        fateKnown = true;
        clearTimeout(grace);
        answered?.();
        if (fate && settledWithoutIt) limits.onOrphaned?.(fate);
      };
      let settledWithoutIt = false;
      const finish = (): boolean => {
        if (settled) return false;
        settled = true;
        this.deadlines.cancel(deadline, budget);
        stopListening?.();
        if (waitingForReady) this.readyWaiters.delete(waitingForReady);
        this.pending.delete(call);
        return true;
      };
      const call: PendingCall = {
        fail: (error) => {
          if (!finish()) return;
          reject(error);
          if (dispatched && !fateKnown) {
            settledWithoutIt = true;
            // A command that never settles (a reset connection that ioredis does not re-send)
            // counts as "unknown" after one more commandTimeout.
            if (limits.onOrphaned || lane) {
              grace = setTimeout(() => learn({ ran: 'unknown' }), this.commandTimeout);
              grace.unref();
            }
          }
        },
        endsWithClose: limits.endsWithClose === true,
      };
      const fail = (error: unknown): void => call.fail(asLockError(error, lock, operation));
      const deadline = this.deadlines.add(budget, () => {
        const status = this.status();
        const detail =
          status === undefined || status === 'ready'
            ? `Redis did not answer within ${Math.round(budget)} ms`
            : `Redis was not reachable within ${Math.round(budget)} ms (connection ${status})`;
        fail(new RedisUnavailableError(lock, operation, detail));
      });
      const stopListening = signal && onAbort(signal, () => call.fail(signal.reason));
      this.pending.add(call);

      const dispatch = (): void => {
        waitingForReady = undefined;
        if (settled) return;
        if (lane?.unanswered) {
          // Still answered late, maybe: this call goes out after it (while its budget lasts).
          lane.unanswered.then(dispatch, dispatch);
          return;
        }
        let sent: Promise<T>;
        try {
          this.coalesce();
          sent = send();
        } catch (error) {
          return fail(error);
        }
        dispatched = true;
        if (lane) {
          const unanswered = new Promise<void>((resolveAnswered) => (answered = resolveAnswered));
          lane.unanswered = unanswered;
          void unanswered.then(() => {
            if (lane.unanswered === unanswered) lane.unanswered = undefined;
          });
        }
        sent.then(
          (value) => {
            if (finish()) resolve(value);
            learn({ ran: true, value });
          },
          (error: unknown) => {
            // The connection dropped between the check and the write: wait for it again.
            if (!settled && isNotWritable(error) && this.status() !== 'ready') {
              dispatched = false;
              learn(undefined);
              waitingForReady = this.whenReady(dispatch, fail);
              return;
            }
            // Written, then cut off or timed out by ioredis: it may run yet, or have run.
            const ambiguous = mayHaveRun(error);
            if (!settled && ambiguous) settledWithoutIt = true;
            fail(error);
            learn(ambiguous ? { ran: 'unknown' } : undefined);
          },
        );
      };
      waitingForReady = this.whenReady(dispatch, fail);
    });
  }

  /**
   * Commands sent in one tick (a burst of acquisitions, the releases that one read of replies sets
   * off) leave the process in one write instead of one each: the first goes out at once, and the
   * socket is corked for the rest until the end of the tick. One write per command was a quarter
   * of the client's CPU with thousands in flight. The socket keeps the order of every write, the
   * app's own commands on the connection included, so ioredis' queue of replies stays in step.
   */
  private coalesce(): void {
    if (!this.tickOpen) {
      this.tickOpen = true;
      process.nextTick(this.endTick);
      return;
    }
    if (this.corked) return;
    const socket = (this.redis as { stream?: Partial<Corkable> }).stream;
    if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return;
    socket.cork();
    this.corked = socket as Corkable;
  }

  private readonly endTick = (): void => {
    this.tickOpen = false;
    const socket = this.corked;
    this.corked = undefined;
    socket?.uncork();
  };

  /** Settles every pending call of a wait with `reason` (the client is closing). */
  abortWaits(reason: unknown): void {
    for (const call of [...this.pending]) if (call.endsWithClose) call.fail(reason);
  }

  /**
   * Runs `go` at once when the connection is ready; otherwise when it is, returning the callback
   * registered for that. `fail` when it never will be (the connection was closed by its owner).
   */
  private whenReady(go: () => void, fail: (error: unknown) => void): (() => void) | undefined {
    const status = this.status();
    if (status === undefined || status === 'ready') {
      go();
      return undefined;
    }
    if (status === 'end') {
      fail(new ConnectionEnded());
      return undefined;
    }
    // lazyConnect: nothing connects until a command is sent, and none will be until it is ready.
    if (status === 'wait')
      (this.redis as { connect?: () => Promise<unknown> }).connect?.().catch(() => undefined);
    this.listen();
    const waiter = (): void => {
      this.readyWaiters.delete(waiter);
      go();
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

  private status(): string | undefined {
    return (this.redis as { status?: string }).status;
  }
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
