import type { LockContext } from '../context';
import type { Fate } from '../redis/redis-calls';
import type { RequestWindow } from '../protocol/resend';
import { acquireOrWait, type StepLimits, type WakeSource } from '../waiting/acquire-or-wait';

/**
 * Waiting for permits (either semaphore) through the shared wait loop (waiting/acquire-or-wait.ts), with a request
 * latch per attempt, as the locks wait:
 * - an attempt that acquired but whose answer came too late (the wait had given up on that call)
 *   is adopted while the wait still waits, and withdrawn once it does not;
 * - an attempt whose outcome nobody can tell (ioredis timed it out, the connection cut it) is
 *   withdrawn, so whatever it took, or would take if it runs later, goes back;
 * - a grant that lands just as the caller stops waiting (abort, close) is withdrawn.
 */
export interface PermitRequests<G, R extends RequestWindow> {
  /** One attempt under a fresh request: its grant, or when to look again (ms; -1: at a message). */
  attempt(request: R, limits: StepLimits): Promise<{ grant: G } | { retryIn: number }>;
  /** Gives back what request `request` took, and makes a later copy of it take nothing. */
  withdraw(request: R): Promise<unknown>;
  /** A fresh request (its latch, or permit id, and its window), made within the limits. */
  newRequest(limits: StepLimits): Promise<R>;
  openWakeSource(limits: StepLimits): Promise<WakeSource>;
  /** Sends `send` until Redis answers it, in the background, until `stopAt` (performance.now()). */
  sendUntilAnswered(operation: string, stopAt: number, send: () => Promise<unknown>): Promise<void>;
}

export interface PermitWait {
  name: string;
  waitTime: number;
  signal?: AbortSignal;
}

type Answer<G> = { grant: G } | { retryIn: number };

export async function waitForPermits<G, R extends RequestWindow>(
  context: LockContext,
  requests: PermitRequests<G, R>,
  wait: PermitWait,
): Promise<G | false> {
  context.closing.throwIfAborted();
  let granted: { request: R; grant: G } | undefined;
  let waiting = true;
  // Sent until Redis answers, for as long as the request's latch lives: a withdrawal that came
  // later would find nothing to give back.
  const withdraw = (request: R): void =>
    void requests.sendUntilAnswered('withdraw', request.forgottenAt, () => requests.withdraw(request));
  const orphaned = (fate: Fate<Answer<G>>, request: R): void => {
    if (fate.ran === true && !('grant' in fate.value)) return;
    if (fate.ran === true && 'grant' in fate.value && waiting && !granted) {
      granted = { request, grant: fate.value.grant };
      return;
    }
    withdraw(request);
  };
  let outcome: Awaited<ReturnType<typeof acquireOrWait>> = false;
  try {
    outcome = await acquireOrWait({
      attempt: async (_kind, limits) => {
        if (granted) return null;
        const request = await requests.newRequest(limits);
        const answer = await context.calls.run(
          wait.name,
          'acquire',
          () => requests.attempt(request, limits),
          {
            ...limits,
            endsWithClose: true,
            onOrphaned: (fate) => orphaned(fate, request),
          },
        );
        if ('grant' in answer) {
          // An earlier attempt's late grant was adopted meanwhile: this one is one too many.
          if (granted) withdraw(request);
          else granted = { request, grant: answer.grant };
          return null;
        }
        return answer.retryIn;
      },
      // A grant the caller no longer waits for goes back in the finally below.
      undoGrant: () => Promise.resolve(),
      openWakeSource: (limits) => requests.openWakeSource(limits),
      wakeSourceFirst: false,
      waitTime: wait.waitTime,
      commandTimeout: context.calls.commandTimeout,
      signal: wait.signal,
      closing: context.closing,
      maxSleep: context.watchdogTimeout,
      onRetry: (error, retryInMs) =>
        context.reportRedisError({ name: wait.name, operation: 'acquire', error, retryInMs }),
    });
  } finally {
    waiting = false;
    // A late grant adopted as the wait ended without it (time out, error) goes back.
    if (!outcome && granted) withdraw(granted.request);
  }
  if (!outcome || !granted) return false;
  return granted.grant;
}
