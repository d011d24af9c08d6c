import Redis, { Cluster } from 'ioredis';

/**
 * Which Redis the portable test files run against: one standalone server (the default), or a
 * 3-master Redis Cluster when RLOCK_TEST_DEPLOYMENT=cluster (the cluster project in jest.config.ts).
 * Worker processes inherit the variable, so they connect the same way.
 */
export type Deployment = 'standalone' | 'cluster';

export const deployment: Deployment =
  process.env.RLOCK_TEST_DEPLOYMENT === 'cluster' ? 'cluster' : 'standalone';

/** What a test may set on a connection of either kind. */
export interface ConnectOptions {
  keyPrefix?: string;
  enableAutoPipelining?: boolean;
  enableOfflineQueue?: boolean;
}

/** A connection to the test's Redis at `port` (on a cluster, any node: the rest is discovered). */
export function connectTo(port: number, options: ConnectOptions = {}): Redis {
  if (deployment === 'standalone') return new Redis({ port, host: '127.0.0.1', ...options });
  // Used through the commands both share (commands on keys); see useRedis().admin.
  return new Cluster([{ host: '127.0.0.1', port }], options) as unknown as Redis;
}
