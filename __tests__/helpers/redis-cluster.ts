import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, type ClusterOptions } from 'ioredis';
import type Redis from 'ioredis';
import { hashSlot } from '../../src/redis/slots';
import { CLOSE_AT_ONCE, closeNow, startRedis, type RedisServer } from './redis-server';

/**
 * A throwaway Redis Cluster: `masters` redis-server processes with --cluster-enabled (plus
 * `replicas` per master), joined by `redis-cli --cluster create`, on free loopback ports.
 */
export interface RedisClusterServers {
  /** Every node, masters first as redis-cli assigned them. */
  readonly nodes: RedisServer[];
  /** A node to start from (ioredis discovers the rest). */
  readonly seedPort: number;
  /** A new Cluster connection, closed by stop(). */
  connect(options?: ClusterOptions): Cluster;
  /** The node that serves `key` now (asks the cluster). */
  masterOf(key: string): Promise<RedisServer>;
  /** A replica of `master`. */
  replicaOf(master: RedisServer): Promise<RedisServer>;
  /** Moves the slot of `key`, with its keys, to master `to` (what resharding does, one slot). */
  migrateSlotOf(key: string, to: RedisServer): Promise<void>;
  /** Empties every master. */
  flushAll(): Promise<void>;
  /** Waits until every node says the cluster is healthy again (after a node was paused or restarted). */
  healthy(): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterShape {
  masters?: number;
  replicas?: number;
  /** cluster-node-timeout: how long a node may be silent before failover starts, in ms. */
  nodeTimeout?: number;
  /** More redis-server arguments for every node. */
  serverArgs?: string[];
}

export async function startCluster({
  masters = 3,
  replicas = 0,
  nodeTimeout = 1_000,
  serverArgs = [],
}: ClusterShape = {}): Promise<RedisClusterServers> {
  const dirs: string[] = [];
  const nodes = await Promise.all(
    Array.from({ length: masters * (1 + replicas) }, () => {
      const dir = mkdtempSync(join(tmpdir(), 'rlock-cluster-'));
      dirs.push(dir);
      return startRedis([
        '--cluster-enabled',
        'yes',
        '--dir',
        dir,
        '--cluster-node-timeout',
        String(nodeTimeout),
        // A replica cut off for a while may still take over (tests stop and kill nodes at will).
        '--cluster-replica-validity-factor',
        '0',
        ...serverArgs,
      ]);
    }),
  );
  const connections: Cluster[] = [];
  const stop = async (): Promise<void> => {
    for (const connection of connections.splice(0)) connection.disconnect();
    await Promise.all(nodes.map((node) => node.stop()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await waitUntilConsistent(nodes, replicas);
  } catch (error) {
    await stop();
    throw error;
  }
  const seedPort = (nodes[0] as RedisServer).port;
  const admin = (): Cluster => {
    const connection = new Cluster([{ host: '127.0.0.1', port: seedPort }], { redisOptions: CLOSE_AT_ONCE });
    connection.on('error', () => undefined);
    connections.push(connection);
    return connection;
  };
  let adminConnection: Cluster | undefined;
  const masterOf = async (key: string): Promise<RedisServer> => {
    const slot = hashSlot(key);
    const ranges = (await askAnyNode(nodes, (node) => node.cluster('SLOTS'))) as unknown as Array<
      [number, number, [string, number]]
    >;
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    const port = range?.[2][1];
    const node = nodes.find((candidate) => candidate.port === port);
    if (!node) throw new Error(`no master serves slot ${slot}`);
    return node;
  };

  return {
    nodes,
    seedPort,
    connect(options: ClusterOptions = {}) {
      const connection = new Cluster([{ host: '127.0.0.1', port: seedPort }], {
        ...options,
        redisOptions: { ...CLOSE_AT_ONCE, ...options.redisOptions },
      });
      connection.on('error', () => undefined);
      connections.push(connection);
      return connection;
    },
    masterOf,
    async replicaOf(master) {
      const lines = String(await askAnyNode(nodes, (node) => node.cluster('NODES')))
        .trim()
        .split('\n');
      const fields = lines.map((line) => line.split(' '));
      const masterId = fields.find(([, address]) => address?.startsWith(`127.0.0.1:${master.port}@`))?.[0];
      const replica = fields.find(([, , flags, parent]) => flags?.includes('slave') && parent === masterId);
      const port = Number(replica?.[1]?.split(/[:@]/)[1]);
      const node = nodes.find((candidate) => candidate.port === port);
      if (!node) throw new Error(`no replica of ${master.port}`);
      return node;
    },
    async migrateSlotOf(key, to) {
      const slot = hashSlot(key);
      const from = await masterOf(key);
      const source = from.connect();
      const target = to.connect();
      const idOf = async (node: Redis): Promise<string> => String(await node.cluster('MYID'));
      const [sourceId, targetId] = [await idOf(source), await idOf(target)];
      await target.cluster('SETSLOT', slot, 'IMPORTING', sourceId);
      await source.cluster('SETSLOT', slot, 'MIGRATING', targetId);
      for (;;) {
        const keys = (await source.cluster('GETKEYSINSLOT', slot, 100)) as string[];
        if (keys.length === 0) break;
        await source.migrate('127.0.0.1', to.port, '', 0, 5_000, 'KEYS', ...keys);
      }
      // The new owner first, then the old one, then everyone else (the documented order).
      const masters = await Promise.all(
        nodes.map(async (node) => {
          const connection = node.connect();
          return { node, connection, role: String(await connection.role()) };
        }),
      );
      const order = [
        to,
        from,
        ...masters.map(({ node }) => node).filter((node) => node !== to && node !== from),
      ];
      for (const node of order) {
        const entry = masters.find((candidate) => candidate.node === node);
        if (entry?.role.startsWith('master'))
          await entry.connection.cluster('SETSLOT', slot, 'NODE', targetId);
      }
    },
    async flushAll() {
      adminConnection ??= admin();
      await Promise.all(adminConnection.nodes('master').map((node) => node.flushall()));
    },
    healthy: () => waitUntilConsistent(nodes, replicas),
    stop,
  };
}

/**
 * Asks the first node that answers: the test may have killed or frozen some. (A Cluster
 * connection would queue the question on a dead node.)
 */
async function askAnyNode<T>(nodes: RedisServer[], question: (node: Redis) => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (const node of nodes) {
    const connection = node.connect({
      retryStrategy: () => null,
      enableOfflineQueue: false,
      commandTimeout: 300,
    });
    try {
      await new Promise((resolve, reject) => connection.once('ready', resolve).once('end', reject));
      return await question(connection);
    } catch (error) {
      lastError = error;
    } finally {
      closeNow(connection);
    }
  }
  throw lastError;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`)),
    );
  });
}

/**
 * Every node reports the cluster healthy and knows every node, and every master's replicas are
 * in sync: ready for clients.
 */
async function waitUntilConsistent(nodes: RedisServer[], replicas: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (const node of nodes) {
    const connection = node.connect();
    try {
      for (;;) {
        const info = String(await connection.cluster('INFO'));
        const known = String(await connection.cluster('NODES'))
          .trim()
          .split('\n').length;
        const replication = await connection.info('replication');
        const synced =
          !replication.includes('role:master') ||
          (replication.match(/state=online/g) ?? []).length === replicas;
        if (info.includes('cluster_state:ok') && known === nodes.length && synced) break;
        if (Date.now() > deadline) throw new Error(`cluster not consistent on ${node.port}:\n${info}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      connection.disconnect();
    }
  }
}
