import type { RedisConnection } from './connection';

/** The parts of an ioredis connection that coalescing reads: its socket and its reply queue. */
interface CoalescingView {
  stream?: CorkableStream;
  commandQueue?: { length?: number };
}

interface CorkableStream {
  cork?: () => void;
  uncork?: () => void;
  writableCorked?: number;
}

/**
 * How many scripts one write carries at most. A burst of thousands of acquisitions in one tick
 * would otherwise hold every command's text (about 300 bytes, with its pieces) until the tick
 * ends: the garbage collector, running several times inside such a tick, copied all of them.
 * A write of 64 is as cheap per command as one of thousands.
 */
const SCRIPTS_PER_WRITE = 64;

/** The sockets rlock corked, and how many scripts each holds back so far. */
const corked = new WeakMap<CorkableStream, { scripts: number }>();

/**
 * Called just before rlock writes a script (every acquisition, release and renewal is one; the
 * queries sent as plain commands are left alone): when other commands are in flight on the connection
 * (a burst of acquisitions, the releases that one read of replies sets off), the socket is corked
 * until the end of the tick, or until SCRIPTS_PER_WRITE scripts wait, so that the commands of the
 * tick leave in a few writes instead of one each. One write per command was a quarter of the
 * client's CPU with thousands in flight. A command sent while nothing is in flight, the usual case
 * of one caller, goes out at once and costs nothing more. The socket keeps the order of every
 * write, the app's own commands on the connection included, so ioredis' queue of replies stays in
 * step. A connection without these parts (a Cluster, whose commands go to its nodes' connections;
 * ioredis-mock) is left alone.
 */
export function coalesceWrites(connection: RedisConnection): void {
  const { stream, commandQueue } = connection as CoalescingView;
  if (!stream) return;
  // Corked already, by rlock earlier in this tick or by someone else: counted, not corked again.
  if (stream.writableCorked !== 0) return countHeldBack(stream);
  if (!commandQueue?.length) return;
  if (typeof stream.cork !== 'function' || typeof stream.uncork !== 'function') return;
  stream.cork();
  corked.set(stream, { scripts: 1 });
  process.nextTick(uncork, stream);
}

/**
 * One more script written to a corked socket: when rlock corked it, it counts, and once
 * SCRIPTS_PER_WRITE wait they leave, this one starting the next batch, still corked.
 */
function countHeldBack(stream: CorkableStream): void {
  const held = corked.get(stream);
  if (!held) return;
  held.scripts += 1;
  if (held.scripts <= SCRIPTS_PER_WRITE) return;
  held.scripts = 1;
  (stream.uncork as () => void)();
  (stream.cork as () => void)();
}

function uncork(stream: CorkableStream): void {
  corked.delete(stream);
  (stream.uncork as () => void)();
}
