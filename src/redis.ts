/**
 * The part of an ioredis-compatible client that rlock uses, described structurally so that
 * ioredis `Redis` and `Cluster`, iovalkey and ioredis-mock are all accepted.
 */
export interface RedisConnection {
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  exists(...keys: string[]): Promise<number>;
  hexists(key: string, field: string): Promise<number>;
  hget(key: string, field: string): Promise<string | null>;
  get(key: string): Promise<string | null>;
  pttl(key: string): Promise<number>;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'ready' | 'close', listener: () => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** A client that can open a second connection like itself (for pub/sub). */
export interface DuplicableConnection extends RedisConnection {
  duplicate(): RedisConnection;
}
