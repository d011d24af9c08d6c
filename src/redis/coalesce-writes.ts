import type { RedisConnection } from './connection';

/** The parts of an ioredis connection that coalescing reads: its socket and its reply queue. */
interface CoalescingView {
  stream?: { cork?: () => void; uncork?: () => void; writableCorked?: number };
  commandQueue?: { length?: number };
}

/**
 * Called just before rlock writes a script (every acquisition, release and renewal is one; the
 * queries sent as plain commands are left alone): when other commands are in flight on the connection
 * (a burst of acquisitions, the releases that one read of replies sets off), the socket is corked
 * until the end of the tick, so that the commands of the tick leave in one write instead of one
 * each. One write per command was a quarter of the client's CPU with thousands in flight. A
 * command sent while nothing is in flight, the usual case of one caller, goes out at once and
 * costs nothing more. The socket keeps the order of every write, the app's own commands on the
 * connection included, so ioredis' queue of replies stays in step. A connection without these
 * parts (a Cluster, whose commands go to its nodes' connections; ioredis-mock) is left alone.
 */
export function coalesceWrites(connection: RedisConnection): void {
  const { stream, commandQueue } = connection as CoalescingView;
  if (!commandQueue?.length || !stream || stream.writableCorked !== 0) return;
  if (typeof stream.cork !== 'function' || typeof stream.uncork !== 'function') return;
  stream.cork();
  process.nextTick(uncork, stream);
}

function uncork(stream: { uncork(): void }): void {
  stream.uncork();
}
