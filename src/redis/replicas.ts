import { isCluster, type RedisConnection } from './connection';
import { hashSlot } from './slots';

/**
 * The waitForReplicas option: after each acquisition and release, WAIT until `replicas` replicas
 * acknowledged the write, at most `timeout` ms (Redisson's checkLockSyncedSlaves). Redis
 * replicates asynchronously; without this a failover can lose a lock its holder was told it has.
 */
export interface ReplicaWait {
  replicas: number;
  /** ms; default 1000. */
  timeout?: number;
}

/**
 * How many replicas acknowledged this connection's writes so far. WAIT covers every earlier write
 * of the connection it runs on, so it must follow the script on the same one: on a cluster, the
 * connection to the master of the key's slot.
 */
export async function acknowledgedBy(
  redis: RedisConnection,
  key: string,
  replicas: number,
  timeout: number,
): Promise<number> {
  let connection: Pick<RedisConnection, 'wait'> | undefined = redis;
  if (isCluster(redis)) {
    const master = redis.slots[hashSlot(key)]?.[0];
    connection = redis.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === master);
  }
  if (typeof connection?.wait !== 'function') {
    throw new Error(`waitForReplicas: no connection to the master of "${key}" to send WAIT on`);
  }
  return Number(await connection.wait(replicas, timeout));
}
