/**
 * The least a direct hand-off can do, measured in the contended scenario beside the libraries: the
 * waiters queue in a Redis list; a release grants the lock to the head inside its script and
 * publishes on that waiter's channel; the waiter's body starts when the message is read, with no
 * round trip of its own. One script to take, one to give back, a subscriber per process, nothing
 * else: no lease, no re-entry, no recovery from a lost message or a waiter that died, none of what
 * a lock library may not leave out. Its hand-off gap is what one hand-off costs on this machine
 * (the release's trip to Redis, the script, the message's trip to the waiter's process and that
 * process being run), so each run shows how far a library's gap is above it.
 */
import Redis from 'ioredis';
import type { Library, Release } from './adapters';

/** KEYS: lock, its queue. ARGV: the owner. 1 when taken; 0 when the owner queued. */
const TAKE = `if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[1])
  return 1
end
redis.call('rpush', KEYS[2], ARGV[1])
return 0`;

/**
 * KEYS: lock, its queue. ARGV: the channels' prefix. Grants the lock to the head of the queue and
 * tells its client (an owner is "<client>:<n>") on the prefix + client channel.
 */
const GIVE = `local next = redis.call('lpop', KEYS[2])
if not next then return redis.call('del', KEYS[1]) end
redis.call('set', KEYS[1], next)
return redis.call('publish', ARGV[1] .. string.match(next, '^(.*):'), next)`;

const CHANNELS = 'bench:handoff-floor:';

interface FloorCommands {
  handoffTake(lock: string, queue: string, owner: string): Promise<number>;
  handoffGive(lock: string, queue: string, channels: string): Promise<number>;
}

/** The connections the floor uses: its own by default (bench:handoff gives it watched ones). */
export interface FloorConnections {
  redis: Redis;
  subscriber: Redis;
}

/** The hand-off floor as a Library, on a connection and a subscriber of its own unless given. */
export async function openHandoffFloor(
  port: number,
  connections: FloorConnections = {
    redis: new Redis({ port, host: '127.0.0.1' }),
    subscriber: new Redis({ port, host: '127.0.0.1' }),
  },
): Promise<Library> {
  const { redis, subscriber } = connections;
  redis.defineCommand('handoffTake', { lua: TAKE, numberOfKeys: 2 });
  redis.defineCommand('handoffGive', { lua: GIVE, numberOfKeys: 2 });
  const commands = redis as unknown as FloorCommands;
  const client = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  /** The waits of this process, by owner: each resolves when a release grants it the lock. */
  const granted = new Map<string, () => void>();
  subscriber.on('message', (_channel: string, owner: string) => {
    const grant = granted.get(owner);
    granted.delete(owner);
    grant?.();
  });
  await subscriber.subscribe(`${CHANNELS}${client}`);
  let owners = 0;

  const lock = async (key: string): Promise<Release> => {
    const owner = `${client}:${(owners += 1)}`;
    const queue = `${key}:floor-queue`;
    // Listening before the script runs: a release may grant the lock before its answer is read.
    const handedOver = new Promise<void>((resolve) => granted.set(owner, resolve));
    if ((await commands.handoffTake(key, queue, owner)) === 1) granted.delete(owner);
    else await handedOver;
    return async () => {
      await commands.handoffGive(key, queue, CHANNELS);
    };
  };
  return {
    lock,
    holdRenewed: lock,
    renewalPeriodMs: Number.NaN,
    async close() {
      subscriber.disconnect();
      redis.disconnect();
    },
  };
}
