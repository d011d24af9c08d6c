import type { Socket } from 'node:net';
import { useRedis } from '../helpers/setup';

/**
 * Commands sent in one tick leave in a few socket writes (see redis/coalesce-writes.ts), and the app's own
 * commands on the shared connection keep their place among them: ioredis matches replies to
 * commands by order alone, so a write out of order would hand each caller another's answer.
 */
describe('write coalescing', () => {
  const redis = useRedis();

  /**
   * Counts the writes the connection's socket makes (one per _write, one per _writev), and the
   * commands the largest one carried.
   */
  const countWrites = (socket: Socket): { count(): number; largest(): number } => {
    let writes = 0;
    let largest = 0;
    const internals = socket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
    for (const method of ['_write', '_writev'] as const) {
      const original = internals[method].bind(socket);
      internals[method] = (...args: unknown[]) => {
        writes += 1;
        largest = Math.max(largest, method === '_writev' ? (args[0] as unknown[]).length : 1);
        return original(...args);
      };
    }
    return { count: () => writes, largest: () => largest };
  };

  test('200 acquisitions of one tick leave in five writes, their releases in a few', async () => {
    const connection = redis.connect();
    const client = redis.client({}, connection);
    await client.getLock('warm').withLock(() => undefined);
    const writes = countWrites((connection as unknown as { stream: Socket }).stream);
    const locks = Array.from({ length: 200 }, (_, i) => client.getLock(`w-${i}`));
    await Promise.all(locks.map((lock) => lock.lock()));
    // The first command of the tick goes out at once, the other 199 in writes of at most 64: a
    // burst's command texts are not all held until the tick ends.
    expect(writes.count()).toBe(1 + Math.ceil(199 / 64));
    expect(writes.largest()).toBe(64);
    await Promise.all(locks.map((lock) => lock.unlock()));
    // One read of replies sets off many releases at once: far fewer writes than releases.
    expect(writes.count()).toBeLessThan(2 + 50);
    expect(await redis.admin().keys('w-*')).toEqual([]);
    await client.close();
  });

  test("the app's commands sent among rlock's in one tick get their own answers", async () => {
    const connection = redis.connect();
    const client = redis.client({}, connection);
    const rounds = Array.from({ length: 100 }, async (_, i) => {
      const lock = client.getLock(`mixed-${i % 10}`);
      const [, set, value] = await Promise.all([
        lock.tryLock(5_000),
        connection.set(`app-${i}`, `v${i}`),
        connection.get(`app-${i}`),
        connection.incr('app-counter'),
      ]);
      expect(set).toBe('OK');
      expect(value).toBe(`v${i}`);
      await lock.unlock();
    });
    await Promise.all(rounds);
    expect(await connection.get('app-counter')).toBe('100');
    await client.close();
  });
});
