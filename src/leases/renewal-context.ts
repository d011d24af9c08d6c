import type { RedisConnection } from '../redis/connection';
import type { RedisCalls } from '../redis/redis-calls';
import type { RedisErrorReport } from '../events';
import type { PublishCommand } from '../protocol/scripts';

/** The watchdog's options: its timeouts, and what it tells the client. */
export interface WatchdogOptions {
  /** The lease given to watchdog locks, in ms. */
  timeout: number;
  /** How long a fair-lock waiter's place lives without a refresh, in ms. */
  waiterTimeout: number;
  /** How long a hand-off that a refresh makes (of a free lock) waits to be confirmed, in ms. */
  handoffTimeout: number;
  batchSize: number;
  /** Whether a batch must keep to one cluster slot. */
  groupBySlot: boolean;
  /** How Redisson's waiters are told (a refresh may hand a free lock to one of them). */
  publishCommand(): PublishCommand | Promise<PublishCommand>;
  /** A refresh handed fair lock `name` to a waiter: the client watches that hand-off. */
  handedOn(name: string): void;
  /** Told of every failed renewal or refresh (they are retried). */
  report(report: RedisErrorReport): void;
  /** The connection's ioredis keyPrefix: slots are those of the prefixed keys. */
  keyPrefix: string;
  /** Keeps the client's entry (see ClientRegistry) alive at least this many ms, while it holds or waits. */
  keepAnnounced(ms: number): void;
  /**
   * Runs fn in the client's own async scope. The timer reschedules itself for as long as anything
   * is held; started in a caller's scope, it would keep that caller's AsyncLocalStorage stores
   * (its task, a request's context) alive all that time.
   */
  inClientScope<T>(fn: () => T): T;
}

/**
 * What one kind's renewal task is handed by the watchdog that schedules it: the calls and the
 * connection to send through, the watchdog's options, and how to report a failure that the next
 * tick tries again.
 */
export interface RenewalContext {
  readonly calls: RedisCalls;
  readonly redis: RedisConnection;
  readonly options: WatchdogOptions;
  /** A renewal or refresh of `names` failed; it is tried again at the watchdog's next tick. */
  reportRetry(names: string[], operation: string, error: unknown): void;
}

/** How a batch is named in its errors: its one lock, or its first and how many more. */
export function batchName(names: string[]): string {
  const distinct = [...new Set(names)];
  return distinct.length === 1 ? (distinct[0] as string) : `${distinct[0]} (+${distinct.length - 1} more)`;
}

/** Items by key, in the order each key first appears. */
export function groupBy<T, K>(items: T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
