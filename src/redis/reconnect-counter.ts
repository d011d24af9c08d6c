import { isCluster, type RedisConnection } from './connection';

/**
 * Counts the times the connection (on a cluster: any node's) closed. ioredis sends a command again
 * when a reconnect lost its reply, so the answer a caller gets may come from a second run of it:
 * comparing the count before and after a call tells whether that can be.
 */
export class ReconnectCounter {
  private closes = 0;

  constructor(redis: RedisConnection) {
    const count = (): void => {
      this.closes += 1;
    };
    redis.on('close', count);
    if (isCluster(redis)) {
      (redis as unknown as NodeEvents).on('+node', (node) => node.on('close', count));
    }
  }

  /** How many closes so far; a larger value later means a reconnect in between. */
  get count(): number {
    return this.closes;
  }
}

interface NodeEvents {
  on(
    event: '+node',
    listener: (node: { on(event: 'close', listener: () => void): unknown }) => void,
  ): unknown;
}
