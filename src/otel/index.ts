/**
 * `rlock/opentelemetry`: records a LockClient's events as OpenTelemetry metrics.
 *
 * `@opentelemetry/api` is an optional peer dependency: only this entry point imports it, so apps
 * that do not use OpenTelemetry never load it. Without a meter provider set up (an SDK), the API's
 * no-op provider makes every recording free.
 */
import { metrics, type Attributes, type Meter, type MeterProvider } from '@opentelemetry/api';
import type { EventEmitter } from 'node:events';
import type {
  AcquiredEvent,
  LockClientEvents,
  LockKind,
  LockLostEvent,
  NotAcquiredEvent,
  RedisErrorEvent,
  ReleasedEvent,
} from '../events';

/** What instrument() listens to: a LockClient (any version whose events have these names). */
export type InstrumentedClient = EventEmitter<LockClientEvents>;

export interface InstrumentOptions {
  /** Where the meter comes from; default: the global provider (`metrics.getMeterProvider()`). */
  meterProvider?: MeterProvider;
  /** Record on this meter instead (meterProvider is then not used). */
  meter?: Meter;
  /**
   * The value of the `rlock.lock.name` attribute for a lock, or undefined to leave it out. Lock
   * names that embed ids (`order:42`) make one time series per id: map them to their family
   * (`order:*`), or leave them out. Default: the name as it is.
   */
  lockName?: (name: string, kind: LockKind) => string | undefined;
}

/** The metrics instrument() records, by name. */
export const METRICS = {
  waitDuration: 'rlock.lock.wait.duration',
  holdDuration: 'rlock.lock.hold.duration',
  acquisitions: 'rlock.lock.acquisitions',
  timeouts: 'rlock.lock.timeouts',
  lost: 'rlock.lock.lost',
  redisErrors: 'rlock.redis.errors',
} as const;

/** Bucket bounds in seconds for waits and holds: from a fast acquisition (ms) to long holds. */
const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
];

/**
 * Records the client's lock waits, holds, acquisitions, timeouts, lost leases and Redis failures:
 * - `rlock.lock.wait.duration` (histogram, s): from the call to its outcome, with
 *   `rlock.lock.outcome` ('acquired', 'timeout', 'aborted', 'closed', 'error')
 * - `rlock.lock.hold.duration` (histogram, s): from acquisition to release, per hold
 * - `rlock.lock.acquisitions` (counter), with `rlock.lock.contended` (whether it had to wait)
 * - `rlock.lock.timeouts` (counter): waits that ran out without the lock
 * - `rlock.lock.lost` (counter), with `rlock.lock.lost_code` (see LockLostCode)
 * - `rlock.redis.errors` (counter), with `rlock.redis.operation` ('renew', 'subscribe', ...)
 * Each carries `rlock.lock.kind` and `rlock.lock.name` (see InstrumentOptions.lockName); lost
 * leases and Redis errors carry the name only. Returns a function that stops recording.
 */
export function instrument(client: InstrumentedClient, options: InstrumentOptions = {}): () => void {
  const meter = options.meter ?? (options.meterProvider ?? metrics.getMeterProvider()).getMeter('rlock');
  const nameOf = options.lockName ?? ((name: string) => name);
  const waitDuration = meter.createHistogram(METRICS.waitDuration, {
    description: 'How long acquiring a lock took, until it was acquired or given up',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const holdDuration = meter.createHistogram(METRICS.holdDuration, {
    description: 'How long a lock was held, from acquisition to release',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const acquisitions = meter.createCounter(METRICS.acquisitions, {
    description: 'Locks acquired (re-entries included)',
    unit: '{acquisition}',
  });
  const timeouts = meter.createCounter(METRICS.timeouts, {
    description: 'Waits for a lock that ran out without it',
    unit: '{timeout}',
  });
  const lost = meter.createCounter(METRICS.lost, {
    description: 'Leases lost while held',
    unit: '{lease}',
  });
  const redisErrors = meter.createCounter(METRICS.redisErrors, {
    description: 'Redis failures in the background (renewals, subscriptions, retried attempts)',
    unit: '{error}',
  });

  const lockAttributes = (name: string, kind: LockKind): Attributes => {
    const attributes: Attributes = { 'rlock.lock.kind': kind };
    const shown = nameOf(name, kind);
    if (shown !== undefined) attributes['rlock.lock.name'] = shown;
    return attributes;
  };
  const nameAttributes = (name: string, extra: Attributes): Attributes => {
    const shown = nameOf(name, 'lock');
    return shown === undefined ? extra : { 'rlock.lock.name': shown, ...extra };
  };

  const onAcquired = (event: AcquiredEvent): void => {
    const attributes = lockAttributes(event.name, event.kind);
    waitDuration.record(event.waitMs / 1_000, { ...attributes, 'rlock.lock.outcome': 'acquired' });
    acquisitions.add(1, { ...attributes, 'rlock.lock.contended': event.contended });
  };
  const onNotAcquired = (event: NotAcquiredEvent): void => {
    const attributes = lockAttributes(event.name, event.kind);
    waitDuration.record(event.waitMs / 1_000, { ...attributes, 'rlock.lock.outcome': event.reason });
    if (event.reason === 'timeout') timeouts.add(1, attributes);
  };
  const onReleased = (event: ReleasedEvent): void => {
    if (event.heldMs !== undefined) {
      holdDuration.record(event.heldMs / 1_000, lockAttributes(event.name, event.kind));
    }
  };
  const onLost = (event: LockLostEvent): void => {
    lost.add(1, nameAttributes(event.name, { 'rlock.lock.lost_code': event.code }));
  };
  const onRedisError = (event: RedisErrorEvent): void => {
    redisErrors.add(1, nameAttributes(event.name, { 'rlock.redis.operation': event.operation }));
  };

  client.on('acquired', onAcquired);
  client.on('notAcquired', onNotAcquired);
  client.on('released', onReleased);
  client.on('lockLost', onLost);
  client.on('redisError', onRedisError);
  let attached = true;
  return () => {
    if (!attached) return;
    attached = false;
    client.off('acquired', onAcquired);
    client.off('notAcquired', onNotAcquired);
    client.off('released', onReleased);
    client.off('lockLost', onLost);
    client.off('redisError', onRedisError);
  };
}
