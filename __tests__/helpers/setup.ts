import type Redis from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src';
import { deployment, type ConnectOptions } from './deployment';
import { FaultProxy } from './proxy';
import { startCluster, type RedisClusterServers } from './redis-cluster';
import { startRedis, type RedisServer } from './redis-server';
import { commandCalls, sleep } from './wait';

/**
 * The test file's Redis (one redis-server, or a 3-master cluster in the cluster project; see
 * deployment.ts), and a factory of LockClients on it that are all closed after each test.
 */
export function useRedis(serverArgs: string[] = []): {
  /** The standalone server; only for tests that need one server (restarts, proxies). */
  server(): RedisServer;
  /** The cluster's servers; only in the cluster project. */
  cluster(): RedisClusterServers;
  /** The server that holds `key`: the standalone server, or the cluster master of its slot. */
  serverOf(key: string): Promise<RedisServer>;
  /**
   * Resolves once the deployment serves every key again after a server was paused or restarted: at
   * once on one server; on a cluster, once every node says it is healthy (a master silent for longer
   * than the node timeout took the cluster down).
   */
  healthy(): Promise<void>;
  /** Where workers connect: the server, or a node of the cluster. */
  port(): number;
  /**
   * An admin connection. On a cluster it is a Cluster connection: commands on keys are routed to
   * their slot; server-wide ones go through the helpers below, which reach every master.
   */
  admin(): Redis;
  /** A new command connection of the deployment's kind. */
  connect(options?: ConnectOptions): Redis;
  client(options?: LockClientOptions, connection?: Redis): LockClient;
  /** A client whose command connection runs through a FaultProxy (stopped after the test). */
  clientThroughProxy(options?: LockClientOptions): Promise<{ client: LockClient; proxy: FaultProxy }>;
  /** Runs `fn` on every master (the one server when standalone). */
  everyMaster<T>(fn: (node: Redis) => Promise<T>): Promise<T[]>;
  /** CLIENT PAUSE <ms> WRITE on every master. */
  pauseWrites(ms: number): Promise<void>;
  /** How often `command` ran, summed over the masters (INFO commandstats). */
  commandCalls(command: string): Promise<number>;
  /** Script calls summed over the masters (ioredis sends a script first as EVAL, then EVALSHA). */
  scriptCalls(): Promise<number>;
  /** CONFIG RESETSTAT on every master. */
  resetStats(): Promise<void>;
  /** CLIENT KILL TYPE pubsub on every master: every subscriber connection drops. */
  killPubSub(): Promise<void>;
} {
  let server: RedisServer | undefined;
  let cluster: RedisClusterServers | undefined;
  let admin: Redis | undefined;
  const clients: LockClient[] = [];
  const proxies: FaultProxy[] = [];

  beforeAll(async () => {
    if (deployment === 'cluster') {
      cluster = await startCluster({ serverArgs });
      admin = cluster.connect() as unknown as Redis;
    } else {
      server = await startRedis(serverArgs);
      admin = server.connect();
    }
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(proxies.splice(0).map((proxy) => proxy.stop()));
    await everyMaster((node) => node.flushall());
  });
  afterAll(async () => {
    await server?.stop();
    await cluster?.stop();
  });

  const connect = (options: ConnectOptions = {}): Redis =>
    cluster ? (cluster.connect(options) as unknown as Redis) : (server as RedisServer).connect(options);

  const client = (options?: LockClientOptions, connection?: Redis): LockClient => {
    const made = new LockClient(connection ?? connect(), options);
    clients.push(made);
    return made;
  };

  const everyMaster = <T>(fn: (node: Redis) => Promise<T>): Promise<T[]> => {
    const masters = cluster
      ? (admin as unknown as { nodes(role: 'master'): Redis[] }).nodes('master')
      : [admin as Redis];
    return Promise.all(masters.map(fn));
  };

  const callsOf = async (command: string): Promise<number> => {
    const counts = await everyMaster((node) => commandCalls(node, command));
    return counts.reduce((sum, count) => sum + count, 0);
  };

  return {
    server: () => {
      if (!server) throw new Error('this test needs a standalone server');
      return server;
    },
    cluster: () => {
      if (!cluster) throw new Error('this test needs a cluster');
      return cluster;
    },
    serverOf: async (key) => (cluster ? cluster.masterOf(key) : (server as RedisServer)),
    healthy: async () => {
      // The others mark a silent master failing within moments of its return, if at all: look after that.
      if (cluster) await sleep(500).then(() => cluster?.healthy());
    },
    port: () => (cluster ? cluster.seedPort : (server as RedisServer).port),
    admin: () => admin as Redis,
    connect,
    client,
    everyMaster,
    async pauseWrites(ms) {
      await everyMaster((node) => node.client('PAUSE', ms, 'WRITE'));
    },
    commandCalls: callsOf,
    async scriptCalls() {
      return (await callsOf('evalsha')) + (await callsOf('eval'));
    },
    async resetStats() {
      await everyMaster((node) => node.config('RESETSTAT'));
    },
    async killPubSub() {
      await everyMaster((node) => node.client('KILL', 'TYPE', 'pubsub'));
    },
    async clientThroughProxy(options) {
      if (!server) throw new Error('a proxy stands in front of one standalone server');
      const proxy = await new FaultProxy((server as RedisServer).port).start();
      proxies.push(proxy);
      const connection = (server as RedisServer).connect({ port: proxy.port });
      await connection.ping(); // connected before any reply is dropped
      return { client: client(options, connection), proxy };
    },
  };
}
