import type Redis from 'ioredis';
import type { LockClient } from '../../src';
import { LUA_SCRIPTS } from '../../src/protocol/lua.generated';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';

/**
 * The places of fair-lock waiters are kept alive by their client, lock by lock: one script call per
 * batch names each lock's keys once and refreshes all its waiters with one ZADD.
 */

/** A key of lock `name` (Redisson's prefixName: `{name}`, or the name's own hash tag). */
const keyOf = (prefix: string, name: string): string =>
  /\{[^}]+\}/.test(name) ? `${prefix}:${name}` : `${prefix}:{${name}}`;
const queueKey = (name: string): string => keyOf('rlock_fair_queue', name);
const deadlinesKey = (name: string): string => keyOf('rlock_fair_deadlines', name);
const fairKeys = (name: string): string[] => [
  name,
  queueKey(name),
  deadlinesKey(name),
  keyOf('rlock_fair_handoff', name),
  keyOf('rlock_fair_channels', name),
  keyOf('redisson_lock_queue', name),
  keyOf('redisson_lock_timeout', name),
];

/**
 * Starts `count` waits on `name`, each taking the lock once; resolves once all are queued, with
 * their outcomes to come.
 */
async function queueWaiters(
  admin: Redis,
  client: LockClient,
  name: string,
  count: number,
  signal?: (i: number) => AbortSignal | undefined,
): Promise<{ settled: Promise<PromiseSettledResult<void>[]> }> {
  const waits = Array.from({ length: count }, (_, i) =>
    client.runInTask(async () => {
      const lock = client.getFairLock(name);
      await lock.lock({ signal: signal?.(i) });
      await lock.unlock();
    }),
  );
  const settled = Promise.allSettled(waits);
  await eventually(
    `${count} waiters queued on ${name}`,
    async () => (await admin.llen(queueKey(name))) === count,
  );
  return { settled };
}

describe('fair waiters keep their places', () => {
  const redis = useRedis();
  const serverNow = async (): Promise<number> => {
    const [seconds, micros] = await redis.admin().time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  /** Command calls summed over the masters, from one INFO commandstats each (minus INFO itself). */
  async function commandStats(): Promise<Map<string, number>> {
    const infos = await redis.everyMaster((node) => node.info('commandstats'));
    const calls = new Map<string, number>();
    for (const info of infos) {
      for (const [, command, count] of info.matchAll(/^cmdstat_(\S+?):calls=(\d+)/gm)) {
        if (command === 'info' || command?.startsWith('config')) continue;
        calls.set(command as string, (calls.get(command as string) ?? 0) + Number(count));
      }
    }
    return calls;
  }

  /** What Redis ran (scripts and the commands inside them) over `ms` of idle waiting. */
  async function idleFor(
    ms: number,
  ): Promise<{ calls: Map<string, number>; scripts: number; total: number }> {
    await redis.resetStats();
    await sleep(ms);
    const calls = await commandStats();
    const scripts = (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
    const total = [...calls.values()].reduce((sum, count) => sum + count, 0);
    return { calls, scripts, total };
  }

  test('60 waiters on one lock: one script call and one ZADD per period, and their places outlive fairLockWaitTimeout', async () => {
    const admin = redis.admin();
    // The holder's lease outlasts the test and no watchdog renews it: what Redis runs is the refresh.
    await redis.client().getFairLock('idle-one').lock(20_000);
    const client = redis.client({ fairLockWaitTimeout: 600 }); // a place refreshed every 200 ms
    const aborts = Array.from({ length: 10 }, () => new AbortController());
    const { settled: outcomes } = await queueWaiters(admin, client, 'idle-one', 60, (i) => aborts[i]?.signal);
    await sleep(500); // the first refresh has sent the script itself (EVAL); later ones its sha

    const { calls, scripts, total } = await idleFor(1_000);
    expect(scripts).toBeGreaterThanOrEqual(2);
    expect(scripts).toBeLessThanOrEqual(7);
    expect(calls.get('eval') ?? 0).toBe(0);
    expect(calls.get('zadd')).toBe(scripts);
    expect(calls.get('zscore') ?? 0).toBe(0);
    // TIME, ZRANGEBYSCORE, EXISTS, ZADD, PTTL (and PEXPIRE of the queue's three keys when due),
    // EXISTS of Redisson's queue, EXISTS: about 10 a period, never 60.
    expect(total).toBeLessThanOrEqual(11 * scripts);

    // Ten give up; the refreshes that follow never bring their places back.
    for (const abort of aborts) abort.abort();
    await eventually('ten left', async () => (await admin.llen(queueKey('idle-one'))) === 50);
    await sleep(3 * 600);
    expect(await admin.llen(queueKey('idle-one'))).toBe(50);
    expect(await admin.zcard(deadlinesKey('idle-one'))).toBe(50);

    await admin.del('idle-one');
    const settled = await outcomes;
    expect(settled.filter((result) => result.status === 'fulfilled')).toHaveLength(50);
  });

  test('20 waiters on each of 3 locks: one call names each lock once, one ZADD per lock', async () => {
    const admin = redis.admin();
    // One hash tag: on a cluster too the three locks share a slot, and so a call.
    const names = ['{idle}:a', '{idle}:b', '{idle}:c'];
    const holder = redis.client();
    for (const name of names) await holder.getFairLock(name).lock(20_000);
    const connection = redis.connect();
    const client = redis.client({ fairLockWaitTimeout: 600 }, connection);
    const waits = [];
    for (const name of names) waits.push((await queueWaiters(admin, client, name, 20)).settled);
    await sleep(500);

    const sent: Array<{ keys: number; args: number }> = [];
    const send = connection.sendCommand.bind(connection);
    connection.sendCommand = (command, ...rest) => {
      if (command.name === 'evalsha' || command.name === 'eval') {
        sent.push({ keys: Number(command.args[1]), args: command.args.length - 2 });
      }
      return send(command, ...rest);
    };
    const { calls, scripts } = await idleFor(1_000);
    expect(scripts).toBeGreaterThanOrEqual(2);
    expect(calls.get('zadd')).toBe(3 * scripts);
    expect(calls.get('zscore') ?? 0).toBe(0);
    // Each lock's seven keys once; ARGV: two timeouts, the publish command, and per lock 1 count +
    // 20 owners.
    expect(sent.length).toBeGreaterThanOrEqual(2);
    for (const call of sent) expect(call).toEqual({ keys: 21, args: 21 + 3 + 3 * 21 });

    await sleep(3 * 600);
    for (const name of names) expect(await admin.zcard(deadlinesKey(name))).toBe(20);
    await admin.del(...names);
    await Promise.all(waits);
  });

  describe('fair/refresh.lua', () => {
    const refresh = async (
      locks: Array<[name: string, owners: string[]]>,
      timeout = 10_000,
    ): Promise<number[]> =>
      (await redis
        .admin()
        .eval(
          LUA_SCRIPTS['fair/refresh.lua'] as string,
          7 * locks.length,
          ...locks.flatMap(([name]) => fairKeys(name)),
          timeout,
          1_000,
          'publish',
          ...locks.flatMap(([, owners]) => [owners.length, ...owners]),
        )) as number[];
    /** Queues `owners` on `name` with deadlines `ms` from the server's now. */
    const queue = async (name: string, owners: string[], ms = 10_000): Promise<void> => {
      const admin = redis.admin();
      const now = await serverNow();
      await admin.rpush(queueKey(name), ...owners);
      await admin.zadd(deadlinesKey(name), ...owners.flatMap((owner) => [now + ms, owner]));
    };

    test('answers per owner in ARGV order, lock by lock; a place that is gone is not created again', async () => {
      const admin = redis.admin();
      await admin.hset('{r}:a', 'holder', 1);
      await admin.hset('{r}:b', 'holder', 1);
      await queue('{r}:a', ['a1', 'a2']);
      await queue('{r}:b', ['b1']);
      // a3 gave up (or was never queued); b0's deadline has passed: it is dropped.
      await queue('{r}:b', ['b0'], -1);
      expect(
        await refresh([
          ['{r}:a', ['a1', 'a3', 'a2']],
          ['{r}:b', ['b0', 'b1']],
        ]),
      ).toEqual([1, 0, 1, 0, 1, /* per lock: neither handed on */ 0, 0]);
      expect(await admin.zscore(deadlinesKey('{r}:a'), 'a3')).toBeNull();
      expect(await admin.lrange(queueKey('{r}:a'), 0, -1)).toEqual(['a1', 'a2']);
      expect(await admin.lrange(queueKey('{r}:b'), 0, -1)).toEqual(['b1']);
      expect(await admin.zrange(deadlinesKey('{r}:b'), 0, -1)).toEqual(['b1']);
      for (const name of ['{r}:a', '{r}:b']) {
        expect(await admin.pttl(queueKey(name))).toBeGreaterThan(9_000);
        expect(await admin.pttl(deadlinesKey(name))).toBeGreaterThan(9_000);
      }
    });

    test('a refresh in the same ms as the last one (no score changes) still answers kept', async () => {
      const admin = redis.admin();
      await admin.hset('same-ms', 'holder', 1);
      await queue('same-ms', ['w1', 'w2']);
      for (let tries = 0; tries < 200; tries += 1) {
        const script = LUA_SCRIPTS['fair/refresh.lua'] as string;
        const args = [...fairKeys('same-ms'), 10_000, 1_000, 'publish', 2, 'w1', 'w2'];
        const replies = (await admin
          .pipeline()
          .eval(script, 7, ...args)
          .zscore(deadlinesKey('same-ms'), 'w1')
          .eval(script, 7, ...args)
          .zscore(deadlinesKey('same-ms'), 'w1')
          .exec()) as Array<[Error | null, unknown]>;
        const [first, before, second, after] = replies.map(([error, value]) => {
          if (error) throw error;
          return value;
        });
        expect(first).toEqual([1, 1, 0]);
        expect(second).toEqual([1, 1, 0]);
        if (before === after) return; // CH counted nothing, and the places were looked up
      }
      throw new Error('no two refreshes landed in the same ms in 200 tries');
    });

    test('refreshes thousands of places of one lock, 1000 to a ZADD', async () => {
      const admin = redis.admin();
      await admin.hset('many', 'holder', 1);
      const owners = Array.from({ length: 2_500 }, (_, i) => `w${i}`);
      await queue('many', owners, 1_000);
      await redis.resetStats();
      const kept = await refresh([['many', owners]]);
      expect(kept).toHaveLength(2_501);
      expect(kept.slice(0, 2_500).every((one) => one === 1)).toBe(true);
      expect(await redis.commandCalls('zadd')).toBe(3);
      // Every deadline moved from 1 s to 10 s ahead.
      expect(await admin.zcount(deadlinesKey('many'), '-inf', `(${(await serverNow()) + 5_000}`)).toBe(0);
    });

    test('a free lock with waiters queued is handed to the head, which keeps its place until it confirms', async () => {
      const admin = redis.admin();
      await queue('free', ['h', 'w']);
      // w's place is kept; the lock was handed on (HANDED_ON, 2): this client watches that hand-off.
      expect(await refresh([['free', ['w']]])).toEqual([1, 2]);
      expect(await admin.hgetall('free')).toEqual({ h: '1' });
      expect(await admin.pttl('free')).toBeLessThanOrEqual(1_000);
      expect(await admin.hgetall('rlock_fair_handoff:{free}')).toEqual({ '': 'h' });
      expect(await admin.lrange(queueKey('free'), 0, -1)).toEqual(['h', 'w']);
    });
  });
});
