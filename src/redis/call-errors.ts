import { RedisReplyError, RedisUnavailableError, RLockError } from '../errors';
import { ConnectionEnded, OfflineQueueOff } from './readiness';

/**
 * What a Redis failure means to the caller of a call: the typed error it gets (naming the lock and
 * the operation), whether a wait tries again, and whether the command may have run anyway.
 */

/** Reply codes that say "not now" rather than "never": a wait tries again while it has time. */
const PASSING_REPLY_CODES = new Set(['LOADING', 'BUSY', 'MASTERDOWN', 'CLUSTERDOWN', 'TRYAGAIN']);

/** True for errors worth another try within the same wait: Redis unreachable, slow or busy. */
export function isPassing(error: unknown): boolean {
  if (error instanceof RedisUnavailableError) return !(error.cause instanceof ConnectionEnded);
  return error instanceof RedisReplyError && PASSING_REPLY_CODES.has(error.replyCode);
}

/**
 * Whether `error` says that the connection gave up on its commands, as the service set it to:
 * maxRetriesPerRequest reconnection attempts failed, or it is not connected and has no offline
 * queue. ioredis fails the caller's own commands now, so a wait with a time limit ends with it
 * rather than trying again until its time is up (lock(), which has none, rides the outage out).
 */
export function connectionGaveUp(error: unknown): boolean {
  if (!(error instanceof RedisUnavailableError)) return false;
  const { cause } = error;
  return (
    cause instanceof OfflineQueueOff ||
    (cause instanceof Error &&
      (cause.name === 'MaxRetriesPerRequestError' ||
        /enableOfflineQueue options is false/.test(cause.message)))
  );
}

/** ioredis' ways of saying the server could not be reached or did not answer. */
const UNREACHABLE =
  /Connection is closed|Stream isn't writeable|Command timed out|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|EAI_AGAIN|None of startup nodes|Failed to refresh slots cache|Cluster isn't ready|Too many Cluster redirections|max retries per request/i;

/**
 * A script called a command the server does not know. rlock's scripts call only core commands and
 * PUBLISH / SPUBLISH, which servers without pub/sub rename away: a release of a kind that announces
 * (all but the spin lock) then fails after its writes, which stay (scripts do not roll back).
 */
const UNKNOWN_IN_SCRIPT = /Unknown Redis command called from script/i;
const NO_PUBSUB_HINT =
  ' (this server has no PUBLISH: its writes were made, but nobody was told. Use getSpinLock, ' +
  'which sends no pub/sub command, on a server without pub/sub)';

/** The error a caller sees for `error`, raised while doing `operation` on lock `lock`. */
export function asLockError(error: unknown, lock: string, operation: string): unknown {
  if (error instanceof RLockError || !(error instanceof Error)) return error;
  if (error.name === 'ReplyError') {
    const replyCode = /^[A-Z]+/.exec(error.message)?.[0] ?? 'ERR';
    const reply = UNKNOWN_IN_SCRIPT.test(error.message)
      ? `${error.message.trim()}${NO_PUBSUB_HINT}`
      : error.message;
    return new RedisReplyError(lock, operation, replyCode, reply, { cause: error });
  }
  if (
    error instanceof ConnectionEnded ||
    error instanceof OfflineQueueOff ||
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

/** The write was refused: the command never went out. */
export function isNotWritable(error: unknown): boolean {
  return error instanceof Error && /Stream isn't writeable/.test(error.message);
}

/**
 * Whether a command ioredis failed may still have run: every failure but Redis' own answer (a
 * ReplyError: it ran, and refused) and a command that was never written (not writeable).
 */
export function mayHaveRun(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name !== 'ReplyError' && !isNotWritable(error) && !(error instanceof ConnectionEnded);
}
