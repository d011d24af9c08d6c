import type Redis from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src';
import { FaultProxy } from './proxy';
import { startRedis, type RedisServer } from './redis-server';

/**
 * One redis-server for the test file, and a factory of LockClients on it that are all closed
 * after each test.
 */
export function useRedis(serverArgs: string[] = []): {
  server(): RedisServer;
  admin(): Redis;
  client(options?: LockClientOptions, connection?: Redis): LockClient;
  /** A client whose command connection runs through a FaultProxy (stopped after the test). */
  clientThroughProxy(options?: LockClientOptions): Promise<{ client: LockClient; proxy: FaultProxy }>;
} {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  const clients: LockClient[] = [];
  const proxies: FaultProxy[] = [];

  beforeAll(async () => {
    server = await startRedis(serverArgs);
    admin = server.connect();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(proxies.splice(0).map((proxy) => proxy.stop()));
    await admin?.flushall();
  });
  afterAll(async () => {
    await server?.stop();
  });

  const client = (options?: LockClientOptions, connection?: Redis): LockClient => {
    const made = new LockClient(connection ?? (server as RedisServer).connect(), options);
    clients.push(made);
    return made;
  };

  return {
    server: () => server as RedisServer,
    admin: () => admin as Redis,
    client,
    async clientThroughProxy(options) {
      const proxy = await new FaultProxy((server as RedisServer).port).start();
      proxies.push(proxy);
      const connection = (server as RedisServer).connect({ port: proxy.port });
      await connection.ping(); // connected before any reply is dropped
      return { client: client(options, connection), proxy };
    },
  };
}
