import { randomBytes, randomUUID } from 'node:crypto';
import { PUBSUB_OPTIONS, type PubSubOption } from '../waiting/pubsub/mode';
import { isCluster, type RedisConnection } from '../redis/connection';
import type { ReplicaWait } from '../redis/replicas';
import { hashTagOf } from '../redis/slots';
import { checkCount, checkKnownKeys, checkTime, typeError } from '../util/validate';

export interface LockClientOptions {
  /** Lease of locks taken without leaseTime, in ms; renewed every third of it. Default 30 000. */
  watchdogTimeout?: number;
  /** Most locks (or fair-lock places) renewed by one script call. Default 100. */
  watchdogBatchSize?: number;
  /**
   * How long a fair-lock waiter keeps its place without a refresh, in ms. Live waiters are
   * refreshed every third of it, so this bounds only how long a dead waiter holds up the queue.
   * Default 10 000.
   */
  fairLockWaitTimeout?: number;
  /**
   * How long a fair lock's hand-off to the next waiter waits for that waiter's client to confirm
   * it, in ms. A live client confirms within a round trip; a hand-off to a waiter whose process is
   * gone (or stalled, or cut off) comes back after this long and goes to the waiter behind it, while
   * the waiter it passed over keeps its place. Default 1000, or fairLockWaitTimeout when shorter.
   */
  fairLockHandoffTimeout?: number;
  /**
   * A label for this client's owner ids, e.g. the service name: they read
   * `<clientId>/<16 random hex digits>:<n>`, unique per client whatever the label (two processes configured
   * alike never share an owner). Default: none (owner ids `<uuid>:<n>`, as Redisson's).
   */
  clientId?: string;
  /**
   * A connection for pub/sub, used for nothing else. Default: a duplicate of the command
   * connection, opened on the first wait and closed by close(). Not for a Cluster, where rlock
   * opens the connections to the nodes it needs.
   */
  subscriber?: RedisConnection;
  /**
   * How releases are announced: 'sharded' (SPUBLISH / SSUBSCRIBE on the shard that holds the
   * lock), 'classic' (PUBLISH / SUBSCRIBE), or 'auto': sharded on a Cluster whose servers have it
   * (Redis 7), classic otherwise, as Redisson chooses. Every service sharing locks must announce
   * the same way. Default 'auto'.
   */
  pubSub?: PubSubOption;
  /**
   * After each acquisition and release, WAIT until this many replicas acknowledged it (at most
   * `timeout` ms, default 1000), as Redisson's checkLockSyncedSlaves. Fewer is a
   * LockNotReplicatedError: an acquisition is given back first. Off by default.
   */
  waitForReplicas?: ReplicaWait;
  /**
   * How long one Redis call may take before the caller gets a RedisUnavailableError, in ms,
   * whatever the server does (slow, paused, unreachable). Calls inside a wait are bounded by the
   * time left of the wait instead, when that is shorter. Default 3000 (Redisson's `timeout`).
   */
  commandTimeout?: number;
}

/** The options, checked, with their defaults. */
export interface ClientSettings {
  watchdogTimeout: number;
  watchdogBatchSize: number;
  fairLockWaitTimeout: number;
  fairLockHandoffTimeout: number;
  commandTimeout: number;
  /** The first half of every owner id: unique to this client. */
  id: string;
  /** The clientId option, if given. */
  label?: string;
  subscriber?: RedisConnection;
  pubSub: PubSubOption;
  waitForReplicas?: Required<ReplicaWait>;
  /** The connection's ioredis keyPrefix ('' when none). */
  keyPrefix: string;
}

const OPTION_NAMES = [
  'watchdogTimeout',
  'watchdogBatchSize',
  'fairLockWaitTimeout',
  'fairLockHandoffTimeout',
  'clientId',
  'subscriber',
  'pubSub',
  'waitForReplicas',
  'commandTimeout',
] as const satisfies ReadonlyArray<keyof LockClientOptions>;

const DEFAULT_WATCHDOG_TIMEOUT = 30_000;
const DEFAULT_WATCHDOG_BATCH = 100;
const DEFAULT_FAIR_WAIT_TIMEOUT = 10_000;
const DEFAULT_FAIR_HANDOFF_TIMEOUT = 1_000;
const DEFAULT_COMMAND_TIMEOUT = 3_000;
const DEFAULT_REPLICA_WAIT_TIMEOUT = 1_000;
/** The longest clientId label: owner ids stay readable, and far below Redis' limits. */
const MAX_LABEL_LENGTH = 100;

/** Checks the LockClient's arguments; every mistake is a TypeError or RangeError naming it. */
export function parseClientOptions(redis: RedisConnection, options: unknown): ClientSettings {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw typeError('options must be an object');
  }
  checkKnownKeys('options', options, OPTION_NAMES);
  const given = options as LockClientOptions;
  const time = (name: keyof LockClientOptions, fallback: number, min: number): number =>
    given[name] === undefined ? fallback : checkTime(name, given[name], { min, allowMinusOne: false });
  const label = parseLabel(given.clientId);
  const pubSub = given.pubSub ?? 'auto';
  if (!PUBSUB_OPTIONS.includes(pubSub)) {
    throw Object.assign(
      new RangeError(`pubSub must be one of ${PUBSUB_OPTIONS.join(', ')}; got ${String(pubSub)}`),
      {
        code: 'ERR_OUT_OF_RANGE',
      },
    );
  }
  checkSubscriber(redis, given.subscriber);
  const fairLockWaitTimeout = time('fairLockWaitTimeout', DEFAULT_FAIR_WAIT_TIMEOUT, 100);
  return {
    watchdogTimeout: time('watchdogTimeout', DEFAULT_WATCHDOG_TIMEOUT, 100),
    watchdogBatchSize:
      given.watchdogBatchSize === undefined
        ? DEFAULT_WATCHDOG_BATCH
        : checkCount('watchdogBatchSize', given.watchdogBatchSize, 'locks', { min: 1, max: 10_000 }),
    fairLockWaitTimeout,
    fairLockHandoffTimeout: time(
      'fairLockHandoffTimeout',
      Math.min(DEFAULT_FAIR_HANDOFF_TIMEOUT, fairLockWaitTimeout),
      100,
    ),
    commandTimeout: time('commandTimeout', DEFAULT_COMMAND_TIMEOUT, 1),
    // A label is not unique (every instance of a service has it): a random part makes it so.
    id: label === undefined ? randomUUID() : `${label}/${randomBytes(8).toString('hex')}`,
    label,
    subscriber: given.subscriber,
    pubSub,
    waitForReplicas: parseReplicaWait(given.waitForReplicas),
    keyPrefix: parseKeyPrefix(redis),
  };
}

function parseLabel(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw typeError('clientId must be a non-empty string');
  }
  // Braces would make the client's channel a different hash tag; control characters (newlines)
  // would break the messages that name owners.
  // eslint-disable-next-line no-control-regex
  if (value.length > MAX_LABEL_LENGTH || /[{}\u0000-\u001f\u007f]/.test(value)) {
    throw Object.assign(
      new RangeError(
        `clientId must be at most ${MAX_LABEL_LENGTH} characters, without braces or control characters; ` +
          `got ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`,
      ),
      { code: 'ERR_OUT_OF_RANGE' },
    );
  }
  return value;
}

function checkSubscriber(redis: RedisConnection, subscriber: unknown): void {
  if (subscriber === undefined) {
    const duplicable = typeof (redis as { duplicate?: unknown }).duplicate === 'function';
    if (!isCluster(redis) && !duplicable) {
      throw typeError('options.subscriber is required when the redis client has no duplicate() method');
    }
    return;
  }
  if (isCluster(redis)) {
    throw typeError('options.subscriber cannot be used with a Cluster: rlock connects to the nodes it needs');
  }
  if (
    subscriber === null ||
    typeof subscriber !== 'object' ||
    typeof (subscriber as RedisConnection).subscribe !== 'function'
  ) {
    throw typeError('options.subscriber must be an ioredis-compatible connection');
  }
}

function parseReplicaWait(option: unknown): Required<ReplicaWait> | undefined {
  if (option === undefined) return undefined;
  if (option === null || typeof option !== 'object' || Array.isArray(option)) {
    throw typeError('waitForReplicas must be an object { replicas, timeout? }');
  }
  checkKnownKeys('waitForReplicas', option, ['replicas', 'timeout']);
  const { replicas, timeout } = option as ReplicaWait;
  return {
    replicas: checkCount('waitForReplicas.replicas', replicas, 'replicas', { min: 1, max: 1_000 }),
    // WAIT with timeout 0 blocks forever: never.
    timeout:
      timeout === undefined
        ? DEFAULT_REPLICA_WAIT_TIMEOUT
        : checkTime('waitForReplicas.timeout', timeout, { min: 1, allowMinusOne: false }),
  };
}

/**
 * ioredis adds its `keyPrefix` to every key, including the channels rlock passes to its scripts,
 * but not to the channels it subscribes: rlock adds it there. On a cluster, a prefix whose braces
 * do not form a hash tag would leave a lock's keys in slots no choice of names can predict.
 */
function parseKeyPrefix(redis: RedisConnection): string {
  const raw = (redis as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
  const prefix = raw === undefined || raw === null ? '' : String(raw);
  if (isCluster(redis) && /[{}]/.test(prefix) && hashTagOf(prefix) === undefined) {
    throw Object.assign(
      new RangeError(
        `the Cluster's keyPrefix "${prefix}" has braces that do not form a hash tag: a lock's keys could not ` +
          'share one slot. Use a prefix without braces, or with a whole hash tag such as "{app}:"',
      ),
      { code: 'ERR_OUT_OF_RANGE' },
    );
  }
  return prefix;
}
