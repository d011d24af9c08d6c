import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis, { type RedisOptions } from 'ioredis';
import { CLOSE_AT_ONCE, startRedis, type RedisServer } from './redis-server';

/** A master, one replica and one Sentinel watching them (quorum 1), on free loopback ports. */
export interface SentinelDeployment {
  readonly master: RedisServer;
  readonly replica: RedisServer;
  readonly sentinel: RedisServer;
  /** A connection that finds the current master through the Sentinel. */
  connect(options?: RedisOptions): Redis;
  /** The port of the master the Sentinel names now. */
  currentMasterPort(): Promise<number>;
  stop(): Promise<void>;
}

export const MASTER_NAME = 'rlock-test';

export async function startSentinelDeployment(): Promise<SentinelDeployment> {
  const master = await startRedis();
  const replica = await startRedis(['--replicaof', '127.0.0.1', String(master.port)]);
  const dir = mkdtempSync(join(tmpdir(), 'rlock-sentinel-'));
  const config = join(dir, 'sentinel.conf');
  // Sentinel rewrites its config file, so it gets one of its own.
  writeFileSync(
    config,
    [
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 1`,
      `sentinel down-after-milliseconds ${MASTER_NAME} 500`,
      `sentinel failover-timeout ${MASTER_NAME} 2000`,
    ].join('\n') + '\n',
  );
  const sentinel = await startRedis([], [config, '--sentinel']);
  const connections: Redis[] = [];
  const admin = sentinel.connect();
  // The replica is in sync before the test starts.
  const primary = master.connect();
  for (;;) {
    const info = await primary.info('replication');
    if (info.includes('state=online')) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    master,
    replica,
    sentinel,
    connect(options = {}) {
      const connection = new Redis({
        sentinels: [{ host: '127.0.0.1', port: sentinel.port }],
        name: MASTER_NAME,
        ...CLOSE_AT_ONCE,
        ...options,
      });
      connection.on('error', () => undefined);
      connections.push(connection);
      return connection;
    },
    async currentMasterPort() {
      const [, port] = (await admin.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [
        string,
        string,
      ];
      return Number(port);
    },
    async stop() {
      for (const connection of connections.splice(0)) connection.disconnect();
      await Promise.all([sentinel.stop(), replica.stop(), master.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
