import type Redis from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src';
import { startRedis, type RedisServer } from './redis-server';

/**
 * One redis-server for the test file, and a factory of LockClients on it that are all closed
 * after each test.
 */
export function useRedis(serverArgs: string[] = []): {
  server(): RedisServer;
  admin(): Redis;
  client(options?: LockClientOptions, connection?: Redis): LockClient;
} {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  const clients: LockClient[] = [];

  beforeAll(async () => {
    server = await startRedis(serverArgs);
    admin = server.connect();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await admin?.flushall();
  });
  afterAll(async () => {
    await server?.stop();
  });

  return {
    server: () => server as RedisServer,
    admin: () => admin as Redis,
    client(options, connection) {
      const client = new LockClient(connection ?? (server as RedisServer).connect(), options);
      clients.push(client);
      return client;
    },
  };
}
