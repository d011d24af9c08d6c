import {
  fairLockKeys,
  holdLatchBase,
  holdMarkField,
  lockKeys,
  lockWaitersKey,
} from '../../src/protocol/keys';
import { LUA_SCRIPTS } from '../../src/protocol/lua.generated';
import { useRedis } from '../helpers/setup';

/** A fair lock's seven keys, in the order its scripts take them (KEYS[1..7]). */
function queueKeysOf(keys: ReturnType<typeof fairLockKeys>): string[] {
  const { lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts } = keys;
  return [lock, queue, deadlines, marker, channels, redissonQueue, redissonTimeouts];
}

/**
 * A copy of a release (ioredis re-sends a command whose reply a reconnect lost) answers as the
 * release did and changes nothing more, even when the lock has changed hands since. Found by the
 * simulation (seed 34 of __tests__/simulation-regressions.test.ts): a re-sent fair release, remembered
 * by its latch as "freed", handed the lock on a second time while the waiter it went to held it.
 */
describe('a re-sent copy of a release', () => {
  const redis = useRedis();
  const script = (name: string): string => LUA_SCRIPTS[name] as string;

  /** The server's clock, in ms. */
  async function serverMs(): Promise<number> {
    const [seconds, micros] = await redis.admin().time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  test('of a fair lock hands it on once: the waiter it went to keeps it alone', async () => {
    const admin = redis.admin();
    const keys = fairLockKeys('copied-fair');
    const now = await serverMs();
    // A holds the lock by a hand-off it has not confirmed (a hold without a mark); B and C wait.
    await admin.hset(keys.lock, 'A', '1');
    await admin.pexpire(keys.lock, 30_000);
    for (const owner of ['B', 'C']) {
      await admin.rpush(keys.queue, owner);
      await admin.zadd(keys.deadlines, now + 30_000, owner);
    }
    const latch = `${holdLatchBase('copied-fair')}:A:1`;
    // A's release of any one hold of its own, inside a window of 10 s.
    const release = (): Promise<unknown> =>
      admin.eval(
        script('fair/release.lua'),
        8,
        ...queueKeysOf(keys),
        latch,
        'A',
        30_000,
        1_000,
        String(now + 10_000),
        holdMarkField('A:1'),
        'publish',
      );
    expect(await release()).toBe(3);
    expect(await admin.hgetall(keys.lock)).toEqual({ B: '1' });
    // The copy: freed, as the release said, and B still the only holder, C still waiting.
    expect(await release()).toBe(1);
    expect(await admin.hgetall(keys.lock)).toEqual({ B: '1' });
    expect(await admin.lrange(keys.queue, 0, -1)).toEqual(['B', 'C']);
  });

  test('of a lock wakes no second waiting client', async () => {
    const admin = redis.admin();
    const { lock, channel } = lockKeys('copied');
    const waiters = lockWaitersKey('copied');
    const now = await serverMs();
    await admin.hset(lock, 'A', '1');
    await admin.pexpire(lock, 30_000);
    // Two clients wait, each heard on a channel of its own.
    const listener = redis.server().connect();
    const heard: string[] = [];
    listener.on('message', (heardOn: string) => heard.push(heardOn));
    await listener.subscribe('first-client', 'second-client');
    await admin.zadd(waiters, now, 'p:first-client', now + 1, 'p:second-client');
    const latch = `${holdLatchBase('copied')}:A:1`;
    const release = (): Promise<unknown> =>
      admin.eval(
        script('lock/release.lua'),
        4,
        lock,
        channel,
        latch,
        waiters,
        'A',
        30_000,
        'publish',
        String(now + 10_000),
        holdMarkField('A:1'),
      );
    expect(await release()).toBe(3);
    expect(await release()).toBe(1);
    await admin.ping();
    await listener.ping();
    expect(heard).toEqual(['first-client']);
    listener.disconnect();
  });
});

/**
 * A copy of a fair wait's attempt that queued (its reply lost, ioredis sent it again) may run only
 * after a release handed the lock to its owner. Found by the simulation (seeds 500127, 501062,
 * 501733, 501964 and 502998 of __tests__/simulation-regressions.test.ts): the copy counted
 * a second hold on top of the hand-off, and its client, taking the copy's answer for its grant,
 * counted one; its release left the lock held until the lease ran out.
 */
describe("a re-sent copy of a fair wait's attempt", () => {
  const redis = useRedis();

  /** B holds 'copied-attempt' by a hand-off it has not confirmed; C waits behind it. */
  async function handedToB(): Promise<ReturnType<typeof fairLockKeys>> {
    const admin = redis.admin();
    const keys = fairLockKeys('copied-attempt');
    const [seconds] = await admin.time();
    const now = Number(seconds) * 1000;
    await admin.hset(keys.lock, 'B', '1');
    await admin.pexpire(keys.lock, 1_000);
    await admin.hset(keys.marker, '', 'B');
    await admin.pexpire(keys.marker, 3_000);
    for (const owner of ['B', 'C']) {
      await admin.rpush(keys.queue, owner);
      await admin.zadd(keys.deadlines, now + 30_000, owner);
      await admin.hset(keys.channels, owner, `p:channel-of-${owner}`);
    }
    return keys;
  }

  /**
   * B's attempt of request `request` in `mode`, as fair/acquire.lua takes it, from the client at
   * `address` (by default the one the hand-off went to).
   */
  function attempt(
    keys: ReturnType<typeof fairLockKeys>,
    request: string,
    mode: string,
    address = 'p:channel-of-B',
  ): Promise<unknown> {
    return redis
      .admin()
      .eval(
        LUA_SCRIPTS['fair/acquire.lua'] as string,
        8,
        ...queueKeysOf(keys),
        `${holdLatchBase('copied-attempt')}:${request}`,
        30_000,
        'B',
        30_000,
        mode,
        holdMarkField(request),
        1_000,
        address,
        'publish',
      );
  }

  test("takes over the hand-off: one hold, marked as the attempt's, and B out of the queue", async () => {
    const admin = redis.admin();
    const keys = await handedToB();
    // -5: taken over from a hand-off, whose message may still reach its client.
    expect(await attempt(keys, 'B:7', 'first')).toBe(-5);
    expect(await admin.hgetall(keys.lock)).toEqual({ B: '1', [holdMarkField('B:7')]: 'a' });
    expect(await admin.hexists(keys.marker, '')).toBe(0);
    expect(await admin.lrange(keys.queue, 0, -1)).toEqual(['C']);
    expect(await admin.pttl(keys.lock)).toBeGreaterThan(1_000);
  });

  test.each(['reenter', 'try'])(
    'a re-entry (%s) adds its own hold and leaves the hand-off to the confirmation',
    async (mode) => {
      const admin = redis.admin();
      const keys = await handedToB();
      expect(await attempt(keys, 'B:8', mode)).toBeNull();
      expect(await admin.hget(keys.lock, 'B')).toBe('2');
      expect(await admin.hget(keys.marker, '')).toBe('B');
      expect(await admin.lrange(keys.queue, 0, -1)).toEqual(['B', 'C']);
    },
  );

  test("a first attempt of the same owner id from another client re-enters: the hand-off stays its waiter's", async () => {
    const admin = redis.admin();
    const keys = await handedToB();
    expect(await attempt(keys, 'B:9', 'first', 'p:channel-of-another-client')).toBeNull();
    expect(await admin.hget(keys.lock, 'B')).toBe('2');
    expect(await admin.hget(keys.marker, '')).toBe('B');
  });
});
