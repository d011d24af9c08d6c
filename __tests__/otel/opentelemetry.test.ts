import type { Attributes } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import type { LockClient } from '../../src';
import { instrument, METRICS, type InstrumentOptions } from '../../src/otel';
import { useRedis } from '../helpers/setup';
import { sleep } from '../helpers/wait';

/** An SDK with an in-memory exporter, as an app would set one up (exports on flush). */
function metricsSdk(): { provider: MeterProvider; collect(): Promise<MetricData[]> } {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    async collect() {
      exporter.reset();
      await provider.forceFlush();
      return exporter
        .getMetrics()
        .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
    },
  };
}

interface Point {
  attributes: Attributes;
  /** A counter's value, or a histogram's count. */
  count: number;
  /** A histogram's sum. */
  sum?: number;
}

function points(metrics: MetricData[], name: string): Point[] {
  const metric = metrics.find((candidate) => candidate.descriptor.name === name);
  if (!metric) return [];
  return metric.dataPoints.map((point) => {
    if (metric.dataPointType === DataPointType.HISTOGRAM) {
      const value = point.value as Histogram;
      return { attributes: point.attributes, count: value.count, sum: value.sum };
    }
    return { attributes: point.attributes, count: point.value as number };
  });
}

describe('rlock/opentelemetry', () => {
  const redis = useRedis();
  const detachers: Array<() => void> = [];
  const sdks: MeterProvider[] = [];

  afterEach(async () => {
    for (const detach of detachers.splice(0)) detach();
    await Promise.all(sdks.splice(0).map((provider) => provider.shutdown()));
  });

  function instrumented(options: Omit<InstrumentOptions, 'meterProvider'> = {}): {
    client: LockClient;
    collect(): Promise<MetricData[]>;
  } {
    const sdk = metricsSdk();
    sdks.push(sdk.provider);
    const client = redis.client();
    detachers.push(instrument(client, { meterProvider: sdk.provider, ...options }));
    return { client, collect: sdk.collect };
  }

  test('records wait and hold time in seconds, and acquisitions with contention', async () => {
    const { client, collect } = instrumented();
    const holder = client.getLock('otel-order');
    await holder.lock();
    const waiter = client.getLock('otel-order');
    const waiting = waiter.tryLock(10_000);
    await sleep(250);
    await holder.unlock();
    expect(await waiting).toBe(true);
    await waiter.unlock();

    const metrics = await collect();
    const lock = { 'rlock.lock.name': 'otel-order', 'rlock.lock.kind': 'lock' };
    expect(points(metrics, METRICS.acquisitions)).toEqual(
      expect.arrayContaining([
        { attributes: { ...lock, 'rlock.lock.contended': false }, count: 1 },
        { attributes: { ...lock, 'rlock.lock.contended': true }, count: 1 },
      ]),
    );
    const waits = points(metrics, METRICS.waitDuration);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toMatchObject({ attributes: { ...lock, 'rlock.lock.outcome': 'acquired' }, count: 2 });
    expect(waits[0]?.sum).toBeGreaterThan(0.2);
    expect(waits[0]?.sum).toBeLessThan(5);
    const holds = points(metrics, METRICS.holdDuration);
    expect(holds).toMatchObject([{ attributes: lock, count: 2 }]);
    expect(holds[0]?.sum).toBeGreaterThan(0.2);
    const histogram = metrics.find((metric) => metric.descriptor.name === METRICS.waitDuration);
    expect(histogram?.descriptor.unit).toBe('s');
  });

  test('counts timeouts, lost leases and Redis errors', async () => {
    const { client, collect } = instrumented();
    const holder = client.getFencedLock('otel-busy');
    await holder.lock();
    expect(await client.getFencedLock('otel-busy').tryLock(100)).toBe(false);
    expect(await client.getFencedLock('otel-busy').tryLock()).toBe(false);
    // A lease lost while held (forceUnlock from this client deletes it under its holder).
    const lost = new Promise((resolve) => client.once('lockLost', resolve));
    await client.getLock('otel-busy').forceUnlock();
    await lost;
    // A background failure, as the watchdog reports one.
    client.emit('redisError', {
      name: 'otel-busy',
      operation: 'renew',
      error: new Error('down'),
      retryInMs: 10,
    });

    const metrics = await collect();
    const fenced = { 'rlock.lock.name': 'otel-busy', 'rlock.lock.kind': 'fenced' };
    expect(points(metrics, METRICS.timeouts)).toEqual([{ attributes: fenced, count: 2 }]);
    expect(points(metrics, METRICS.waitDuration)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ attributes: { ...fenced, 'rlock.lock.outcome': 'timeout' }, count: 2 }),
      ]),
    );
    expect(points(metrics, METRICS.lost)).toEqual([
      { attributes: { 'rlock.lock.name': 'otel-busy', 'rlock.lock.lost_code': 'force-unlocked' }, count: 1 },
    ]);
    expect(points(metrics, METRICS.redisErrors)).toEqual([
      { attributes: { 'rlock.lock.name': 'otel-busy', 'rlock.redis.operation': 'renew' }, count: 1 },
    ]);
  });

  test('lockName maps names to bounded families, or leaves them out', async () => {
    const { client, collect } = instrumented({
      lockName: (name) => (name.startsWith('secret:') ? undefined : name.replace(/:\d+$/, ':*')),
    });
    for (const id of [1, 2, 3]) await client.getLock(`order:${id}`).withLock(() => undefined);
    await client.getFairLock('secret:7').withLock(() => undefined);

    const acquisitions = points(await collect(), METRICS.acquisitions);
    expect(acquisitions).toEqual(
      expect.arrayContaining([
        {
          attributes: {
            'rlock.lock.name': 'order:*',
            'rlock.lock.kind': 'lock',
            'rlock.lock.contended': false,
          },
          count: 3,
        },
        { attributes: { 'rlock.lock.kind': 'fair', 'rlock.lock.contended': false }, count: 1 },
      ]),
    );
    expect(acquisitions).toHaveLength(2);
  });

  test('records on a given meter; the returned function stops recording and removes its listeners', async () => {
    const sdk = metricsSdk();
    sdks.push(sdk.provider);
    const client = redis.client();
    const detach = instrument(client, { meter: sdk.provider.getMeter('app') });
    expect(client.listenerCount('acquired')).toBe(1);
    await client.getLock('otel-detach').withLock(() => undefined);
    detach();
    detach();
    for (const event of ['acquired', 'notAcquired', 'released', 'lockLost', 'redisError'] as const) {
      expect(client.listenerCount(event)).toBe(0);
    }
    await client.getLock('otel-detach').withLock(() => undefined);
    const metrics = await sdk.collect();
    expect(points(metrics, METRICS.acquisitions)).toMatchObject([{ count: 1 }]);
    expect(points(metrics, METRICS.holdDuration)).toMatchObject([{ count: 1 }]);
  });
});
