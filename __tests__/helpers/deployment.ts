import Redis, { Cluster } from 'ioredis';

/**
 * Which Redis the portable test files run against: one standalone server (the default), or a
 * 3-master Redis Cluster when RLOCK_TEST_DEPLOYMENT=cluster (the cluster project in jest.config.ts).
 * Worker processes inherit the variable, so they connect the same way.
 */
export type Deployment = 'standalone' | 'cluster';

export const deployment: Deployment =
  process.env.RLOCK_TEST_DEPLOYMENT === 'cluster' ? 'cluster' : 'standalone';

/** A connection to the test's Redis at `port` (on a cluster, any node: the rest is discovered). */
export function connectTo(port: number): Redis {
  if (deployment === 'standalone') return new Redis({ port, host: '127.0.0.1' });
  // Used through the commands both share (commands on keys); see useRedis().admin.
  return new Cluster([{ host: '127.0.0.1', port }]) as unknown as Redis;
}
