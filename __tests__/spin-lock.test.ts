import { LockNotHeldError } from '../src';
import { useRedis } from './helpers/setup';
import { sleep, timed } from './helpers/wait';

describe('spin lock', () => {
  const redis = useRedis();

  test('excludes and re-enters as getLock does, in the same hash', async () => {
    const client = redis.client();
    const spin = client.getSpinLock('spin-basic');
    await spin.lock();
    await spin.lock();
    expect(await spin.getHoldCount()).toBe(2);
    expect(await client.getSpinLock('spin-basic').tryLock()).toBe(false);
    expect(await client.getLock('spin-basic').tryLock()).toBe(false);
    await spin.unlock();
    await spin.unlock();
    await expect(spin.unlock()).rejects.toThrow(LockNotHeldError);
    expect(await redis.admin().exists('spin-basic')).toBe(0);
  });

  test('getLock and getSpinLock exclude each other both ways, and a spin waiter takes over after a release', async () => {
    const client = redis.client();
    const plain = client.getLock('spin-mixed');
    await plain.lock();
    const spin = client.getSpinLock('spin-mixed');
    const waiting = timed(spin.tryLock(10_000));
    await sleep(300);
    await plain.unlock();
    const { value, ms } = await waiting;
    expect(value).toBe(true);
    expect(ms).toBeLessThan(2_000);
    const plainWaiter = timed(client.getLock('spin-mixed').tryLock(10_000));
    await sleep(100);
    await spin.unlock();
    // The spin lock's release publishes Redisson's message: a getLock waiter wakes at once.
    const woken = await plainWaiter;
    expect(woken.value).toBe(true);
    expect(woken.ms).toBeLessThan(1_000);
  });

  test('never subscribes: no channel is listened to on any server while it waits', async () => {
    const client = redis.client();
    await client.getLock('spin-nosub').lock();
    const waiting = client.getSpinLock('spin-nosub').tryLock(600);
    await sleep(300);
    // Classic and shard channels, on every master (a cluster spreads them over its nodes).
    const listened = await redis.everyMaster(async (node) => [
      ...((await node.pubsub('CHANNELS')) as string[]),
      ...((await node.call('PUBSUB', 'SHARDCHANNELS')) as string[]),
    ]);
    expect(listened.flat()).toEqual([]);
    expect(await waiting).toBe(false);
  });

  test('backs off: attempts grow sparse, bounded by maxDelay', async () => {
    const client = redis.client();
    await client.getLock('spin-backoff').lock();
    await redis.resetStats();
    const before = await redis.scriptCalls();
    expect(await client.getSpinLock('spin-backoff', { initialDelay: 10, maxDelay: 100 }).tryLock(1_500)).toBe(
      false,
    );
    const attempts = (await redis.scriptCalls()) - before;
    // With no back-off at 10 ms it would be ~150; at the 100 ms cap (with jitter) about 15-30.
    expect(attempts).toBeGreaterThan(8);
    expect(attempts).toBeLessThan(60);
  });

  test('a holder that expires is taken over within its lease; the wait honours waitTime and aborts', async () => {
    const client = redis.client();
    await client.getLock('spin-expiry').lock(500);
    const { value, ms } = await timed(client.getSpinLock('spin-expiry').tryLock(5_000));
    expect(value).toBe(true);
    expect(ms).toBeLessThan(1_500);
    const other = client.getSpinLock('spin-expiry');
    const late = await timed(other.tryLock(400));
    expect(late.value).toBe(false);
    expect(late.ms).toBeGreaterThanOrEqual(380);
    expect(late.ms).toBeLessThan(1_500);
    const controller = new AbortController();
    const aborted = other.lock({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('enough')), 100);
    await expect(aborted).rejects.toThrow('enough');
    expect(await other.getHoldCount()).toBe(0);
  });

  test('bad options are refused', () => {
    const client = redis.client();
    expect(() => client.getSpinLock('x', { initialDelay: -5 })).toThrow(RangeError);
    expect(() => client.getSpinLock('x', { initialDelay: 100, maxDelay: 10 })).toThrow(/maxDelay/);
    expect(() => client.getSpinLock('x', { multiplier: Number.NaN })).toThrow(/multiplier/);
    expect(() => client.getSpinLock('x', { backoff: 1 } as never)).toThrow(/backoff/);
    expect(() => client.getSpinLock('')).toThrow(/name/);
  });
});
