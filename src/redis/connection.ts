/**
 * The part of an ioredis-compatible client that rlock uses, described structurally so that
 * ioredis `Redis` and `Cluster`, iovalkey and ioredis-mock are all accepted.
 */
export interface RedisConnection {
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  exists(...keys: string[]): Promise<number>;
  hexists(key: string, field: string): Promise<number>;
  hget(key: string, field: string): Promise<string | null>;
  hgetall(key: string): Promise<Record<string, string>>;
  get(key: string): Promise<string | null>;
  pttl(key: string): Promise<number>;
  del(...keys: string[]): Promise<number>;
  /** TIME: the server's clock, [seconds, microseconds] (see ServerClock). */
  time(): Promise<Array<string | number>>;
  /** WAIT: used only with the waitForReplicas option. */
  wait?(replicas: number, timeout: number): Promise<number>;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  /** Sharded pub/sub (Redis 7); only used on cluster nodes. */
  ssubscribe?(...channels: string[]): Promise<unknown>;
  sunsubscribe?(...channels: string[]): Promise<unknown>;
  on(event: 'message' | 'smessage', listener: (channel: string, message: string) => void): unknown;
  on(event: 'ready' | 'close' | 'end' | 'moved' | 'refresh', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  once(event: 'ready', listener: () => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** Options rlock overrides when it opens a pub/sub connection like the caller's. */
export interface SubscriberOverrides {
  retryStrategy?: (attempt: number) => number | null;
  enableReadyCheck?: boolean;
  enableAutoPipelining?: boolean;
}

/** A client that can open a second connection like itself (for pub/sub). */
export interface DuplicableConnection extends RedisConnection {
  duplicate(override?: SubscriberOverrides): RedisConnection;
}

/** One node of a cluster, as ioredis `Cluster.nodes()` lists it. */
export interface ShardNode {
  readonly options: { host?: string; port?: number };
  wait?(replicas: number, timeout: number): Promise<number>;
  duplicate(override?: SubscriberOverrides): RedisConnection;
}

/** An ioredis `Cluster`: its slot map and nodes let rlock route pub/sub and batch per slot. */
export interface ClusterConnection extends RedisConnection {
  readonly isCluster: true;
  /** Slot -> node keys (`host:port`), the master first. */
  readonly slots: string[][];
  nodes(role?: 'all' | 'master' | 'slave'): ShardNode[];
  refreshSlotsCache(callback?: (error?: Error) => void): void;
  off(event: 'refresh', listener: () => void): unknown;
}

export function isCluster(redis: RedisConnection): redis is ClusterConnection {
  return (redis as Partial<ClusterConnection>).isCluster === true;
}
