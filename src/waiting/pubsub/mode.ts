import { ClusterLink, SingleLink, SUBSCRIBER_OVERRIDES, type LinkHandlers, type PubSubLink } from './links';
import { isCluster, type DuplicableConnection, type RedisConnection } from '../../redis/connection';
import type { PublishCommand } from '../../protocol/scripts';

/**
 * Which pub/sub carries release notifications. 'sharded' (SPUBLISH / SSUBSCRIBE, Redis 7) keeps a
 * lock's notifications on the shard that holds the lock, instead of broadcasting every release to
 * every node of a cluster; 'classic' is PUBLISH / SUBSCRIBE. 'auto' picks sharded on a cluster
 * whose servers have it, as Redisson does, so both libraries hear each other on one cluster.
 */
export type PubSubMode = 'classic' | 'sharded';
export type PubSubOption = 'auto' | PubSubMode;

export const PUBSUB_OPTIONS: readonly PubSubOption[] = ['auto', 'sharded', 'classic'];

export async function resolvePubSubMode(redis: RedisConnection, option: PubSubOption): Promise<PubSubMode> {
  if (option !== 'auto') return option;
  if (!isCluster(redis)) return 'classic';
  const { command } = redis as { command?: (...args: string[]) => Promise<unknown> };
  if (typeof command !== 'function') return 'classic';
  // COMMAND INFO answers nil for a command the server does not know (Redis before 7).
  const [info] = (await command.call(redis, 'INFO', 'SPUBLISH')) as unknown[];
  return info ? 'sharded' : 'classic';
}

export function publishCommandOf(mode: PubSubMode): PublishCommand {
  return mode === 'sharded' ? 'spublish' : 'publish';
}

/**
 * The connections for a client's pub/sub: per node of a cluster, otherwise one `connection`
 * (the caller's subscriber option, or a duplicate of the command connection).
 */
export function openLink(
  redis: RedisConnection,
  mode: PubSubMode,
  homeChannel: string,
  subscriber: { connection: RedisConnection; owned: boolean } | undefined,
  handlers: LinkHandlers,
): PubSubLink {
  if (isCluster(redis)) return new ClusterLink(redis, mode === 'sharded', homeChannel, handlers);
  const { connection, owned } = subscriber ?? {
    connection: (redis as DuplicableConnection).duplicate(SUBSCRIBER_OVERRIDES),
    owned: true,
  };
  return new SingleLink(connection, owned, mode === 'sharded', handlers);
}
