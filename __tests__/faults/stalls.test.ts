import type { LockClient } from '../../src';
import { reportFault } from '../helpers/report';
import { useRedis } from '../helpers/setup';
import { startWorker } from '../helpers/workers';
import { eventually, sleep, timed } from '../helpers/wait';
import { readFileSync } from 'node:fs';

/**
 * A client whose own event loop stood still (synchronous work, a GC pause, a stopped process) while
 * Redis stayed healthy. When the loop runs again, the timers that came due meanwhile and the answers
 * that arrived meanwhile run in one turn, in an order that says nothing about which came first. What
 * must hold: an answer that arrived is used, a wait whose time the stall ate answers "not acquired"
 * (false, null, LockTimeoutError), and nothing of it is called an outage (RedisUnavailableError).
 */

/** Blocks the event loop for `ms`, as synchronous work does. */
function blockFor(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

/** How an outcome reads in the tables below: the value, or the error's code. */
function outcomeOf(outcome: { value?: unknown; error?: unknown }): unknown {
  if (outcome.error === undefined) return outcome.value;
  return (outcome.error as { code?: string }).code ?? String(outcome.error);
}

/** Whether process `pid` is stopped (SIGSTOP): its state in /proc is T. */
function isStopped(pid: number): boolean {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
}

describe('a client whose event loop stood still', () => {
  const redis = useRedis();

  /**
   * A client whose every answer takes 20 ms to come back, as from a Redis in another zone: a
   * healthy server, but not one that answers within the last millisecond of a wait.
   */
  const waiterBehindLatency = async (): Promise<LockClient> => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: 1_000 });
    await client.getLock('st-warm').withLock(() => undefined);
    proxy.delayReplies(20);
    return client;
  };

  /**
   * One waiter of each kind, and what it answers when its wait ran out: the other client holds what
   * it waits for.
   */
  const KINDS: Array<
    [string, (holder: LockClient) => Promise<unknown>, (waiter: LockClient) => Promise<unknown>, unknown]
  > = [
    ['plain', (h) => h.getLock('st').tryLock(0, 10_000), (w) => w.getLock('st').tryLock(1_000, 5_000), false],
    ['fair', (h) => h.getFairLock('st').tryLock(0, 10_000), (w) => w.getFairLock('st').tryLock(1_000), false],
    [
      'fenced',
      (h) => h.getFencedLock('st').tryLock(0, 10_000),
      (w) => w.getFencedLock('st').tryLock(1_000),
      false,
    ],
    ['spin', (h) => h.getSpinLock('st').tryLock(0, 10_000), (w) => w.getSpinLock('st').tryLock(1_000), false],
    [
      'write',
      (h) => h.getReadWriteLock('st').writeLock().tryLock(0, 10_000),
      (w) => w.getReadWriteLock('st').writeLock().tryLock(1_000),
      false,
    ],
    [
      'read',
      (h) => h.getReadWriteLock('st').writeLock().tryLock(0, 10_000),
      (w) => w.getReadWriteLock('st').readLock().tryLock(1_000),
      false,
    ],
    [
      'multi',
      (h) => h.getLock('st-2').tryLock(0, 10_000),
      (w) => w.getMultiLock(w.getLock('st-1'), w.getLock('st-2')).tryLock(1_000),
      false,
    ],
    [
      'red',
      async (h) => {
        await h.getLock('st-1').tryLock(0, 10_000);
        await h.getLock('st-2').tryLock(0, 10_000);
      },
      (w) => w.getRedLock(w.getLock('st-1'), w.getLock('st-2'), w.getLock('st-3')).tryLock(1_000),
      false,
    ],
    [
      'withLock',
      (h) => h.getLock('st').tryLock(0, 10_000),
      (w) => w.getLock('st').withLock(() => 'ran', { waitTime: 1_000 }),
      'ERR_LOCK_TIMEOUT',
    ],
    [
      'semaphore',
      async (h) => {
        await h.getSemaphore('st').trySetPermits(1);
        await h.getSemaphore('st').acquire();
      },
      (w) => w.getSemaphore('st').tryAcquire(1, 1_000),
      false,
    ],
    [
      'withPermits',
      async (h) => {
        await h.getSemaphore('st').trySetPermits(1);
        await h.getSemaphore('st').acquire();
      },
      (w) => w.getSemaphore('st').withPermits(1, () => 'ran', { waitTime: 1_000 }),
      'ERR_LOCK_TIMEOUT',
    ],
    [
      'expirable semaphore',
      async (h) => {
        await h.getPermitExpirableSemaphore('st').trySetPermits(1);
        await h.getPermitExpirableSemaphore('st').acquire({ leaseTime: 10_000 });
      },
      (w) => w.getPermitExpirableSemaphore('st').tryAcquire({ waitTime: 1_000 }),
      null,
    ],
    [
      'latch',
      (h) => h.getCountDownLatch('st').trySetCount(1),
      (w) => w.getCountDownLatch('st').await({ waitTime: 1_000 }),
      false,
    ],
  ];

  test.each(KINDS)(
    '%s: a wait whose time a blocked loop ate answers "not acquired"',
    async (_kind, hold, wait, expected) => {
      const holder = redis.client();
      const waiter = await waiterBehindLatency();
      await hold(holder);
      const waiting = timed(wait(waiter));
      setTimeout(() => blockFor(1_500), 300);
      expect(outcomeOf(await waiting)).toEqual(expected);
    },
    20_000,
  );

  test('many waits of every kind, woken at once after the loop was blocked, answer "not acquired"', async () => {
    const holder = redis.client();
    const waiter = await waiterBehindLatency();
    // Each kind on names of its own (the table's names with a prefix of the kind).
    const prefixed = (client: LockClient, prefix: string): LockClient =>
      new Proxy(client, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver) as unknown;
          if (typeof value !== 'function' || !String(property).startsWith('get')) return value;
          return (name: unknown, ...rest: unknown[]) =>
            (value as (...args: unknown[]) => unknown).call(
              target,
              typeof name === 'string' ? `${prefix}:${name}` : name,
              ...rest,
            );
        },
      });
    for (const [kind, hold] of KINDS) await hold(prefixed(holder, kind));
    setTimeout(() => blockFor(1_500), 300);
    const settled = Object.fromEntries(
      await Promise.all(
        KINDS.map(async ([kind, , wait]) => [kind, outcomeOf(await timed(wait(prefixed(waiter, kind))))]),
      ),
    );
    expect(settled).toEqual(Object.fromEntries(KINDS.map(([kind, , , expected]) => [kind, expected])));
  }, 20_000);

  test.each([
    ['written before a long block', {}, 1_200],
    // Only a little past the budget: the timer fires late, but not so late that it looks like a stall.
    ['written before a block just past the budget', {}, 530],
    // Auto-pipelined commands go out on the next tick: after the block, with their deadlines passed.
    ['auto-pipelined, written after the block', { enableAutoPipelining: true }, 1_200],
  ])(
    'single calls of every kind use the answers that came while the loop was blocked (%s)',
    async (_label, options, blockMs) => {
      const client = redis.client({ commandTimeout: 500 }, redis.connect(options));
      const held = client.getLock('sc-held');
      await held.lock();
      const released = client.getLock('sc-released');
      await released.lock();
      const fenced = client.getFencedLock('sc-fenced');
      const token = await fenced.tryLockAndGetToken();
      const semaphore = client.getSemaphore('sc-sem');
      await semaphore.trySetPermits(3);
      const latch = client.getCountDownLatch('sc-latch');
      await latch.trySetCount(2);
      const free = client.getLock('sc-free');
      await free.isLocked(); // every script loaded: each call below is one command on the wire
      await free.tryLock();
      await free.unlock();

      const calls = {
        isLocked: held.isLocked(),
        holdCount: held.getHoldCount(),
        heldByMe: held.isHeldByCurrentTask(),
        ttl: held.remainTimeToLive().then((ttl) => ttl > 0),
        tryLock: free.tryLock(),
        token: fenced.getToken(),
        unlock: released.unlock(),
        permits: semaphore.availablePermits(),
        count: latch.getCount(),
      };
      // The commands are on the wire; their answers arrive while the loop stands still, longer than
      // commandTimeout.
      blockFor(blockMs);
      const settled = Object.fromEntries(
        await Promise.all(
          Object.entries(calls).map(async ([call, work]) => [call, outcomeOf(await timed<unknown>(work))]),
        ),
      );
      expect(settled).toEqual({
        isLocked: true,
        holdCount: 1,
        heldByMe: true,
        ttl: true,
        tryLock: true,
        token,
        unlock: undefined,
        permits: 3,
        count: 2,
      });
      expect(await redis.admin().exists('sc-released')).toBe(0);
    },
    20_000,
  );

  // A grant whose answer is read only after the lease it asked for ran out (the loop stood still
  // in between) holds nothing the caller can count on: the key is gone, or about to go, and another
  // owner may hold the lock already. It is given back, and the acquisition looks once more: a
  // single attempt too (the lock may well be free). A re-entry, which the owner's hold keeps alive,
  // is kept.
  test.each([
    ['getLock', (c: LockClient, name: string) => c.getLock(name)],
    ['getFairLock', (c: LockClient, name: string) => c.getFairLock(name)],
    ['getFencedLock', (c: LockClient, name: string) => c.getFencedLock(name)],
  ])(
    '%s: a grant read after its lease ran out is given back, and the lock taken afresh',
    async (_kind, lockOf) => {
      const client = redis.client({ commandTimeout: 2_000 });
      const other = redis.client();
      const lock = lockOf(client, 'st-stale');
      await lock.isLocked(); // its scripts loaded: the attempt below is one command on the wire
      for (const waitTime of [0, 3_000]) {
        const taking = lock.tryLock(waitTime, 300);
        blockFor(600);
        expect(await taking).toBe(true);
        // Held by the look after the stale grant: a fresh lease, one hold.
        const ttl = await redis.admin().pttl('st-stale');
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(300);
        expect(await lock.getHoldCount()).toBe(1);
        await lock.unlock();
      }
      // A re-entry read late is the owner's still: its outer hold keeps the lock.
      await lock.lock();
      const reentering = lock.tryLock(0, 300);
      blockFor(600);
      expect(await reentering).toBe(true);
      expect(await lock.getHoldCount()).toBe(2);
      await lock.unlock();
      await lock.unlock();
      // Nothing of the stale grants stayed: another client takes the lock at once.
      expect(await lockOf(other, 'st-stale').tryLock(0, 1_000)).toBe(true);
    },
  );

  // A wait's attempt answered past its budget (commandTimeout) but within its lease is adopted, and
  // handed to the caller at the wait's next step, which may come after that lease ran out: then it
  // is given back too, not handed on while another client may take the lock.
  test('a late grant adopted by a wait is not handed on after its lease ran out', async () => {
    const { client, proxy } = await redis.clientThroughProxy({ commandTimeout: 1_000 });
    const other = redis.client();
    const lock = client.getLock('st-adopted');
    await lock.withLock(() => undefined); // connected, scripts loaded, the client announced
    proxy.delayReplies(1_100);
    setTimeout(() => proxy.delayReplies(0), 1_150);
    const taking = timed(lock.tryLock(5_000, 1_200));
    // Another client takes the lock whenever it is free, once this one's attempt has run.
    let otherHeldAt: number | undefined;
    const started = performance.now();
    const polling = (async () => {
      await sleep(100);
      while (otherHeldAt === undefined && performance.now() - started < 6_000) {
        if (await other.getLock('st-adopted').tryLock(0, 10_000)) otherHeldAt = performance.now() - started;
        else await sleep(10);
      }
    })();
    const { value, ms } = await taking;
    reportFault('late grant adopted past its lease', {
      value: String(value),
      ms,
      otherHeldAt: otherHeldAt ?? -1,
    });
    // Whatever it answered, a true is a lock Redis holds for this client, and nobody else's.
    if (value === true) {
      expect(await lock.isHeldByCurrentTask()).toBe(true);
      expect(otherHeldAt).toBeUndefined();
    }
    await polling;
  }, 15_000);

  test('a stopped process (SIGSTOP, SIGCONT): its waits answer false and its calls use the answers that came', async () => {
    const holder = redis.client();
    await holder.getLock('sp-plain').tryLock(0, 20_000);
    await holder.getFairLock('sp-fair').tryLock(0, 20_000);
    const semaphore = holder.getSemaphore('sp-sem');
    await semaphore.trySetPermits(1);
    await semaphore.acquire();
    const worker = startWorker([String(redis.port())], {}, 'stall-worker');
    expect(await worker.firstMessage).toBe('ready');
    const pid = worker.child.pid as number;
    try {
      // Waiting: stopped while it sleeps, for longer than its whole wait.
      worker.child.send('wait');
      expect(await worker.nextMessage()).toBe('waiting');
      await sleep(300);
      worker.child.kill('SIGSTOP');
      await sleep(1_500);
      worker.child.kill('SIGCONT');
      const waits = JSON.parse(await worker.nextMessage()) as Record<string, unknown>;

      // Single calls: the worker stops itself as soon as its commands are written.
      worker.child.send('calls');
      await eventually('the worker stopped itself', () => isStopped(pid), 5_000);
      await sleep(1_500);
      worker.child.kill('SIGCONT');
      const calls = JSON.parse(await worker.nextMessage()) as Record<string, unknown>;
      reportFault('client process stopped', { waits: JSON.stringify(waits), calls: JSON.stringify(calls) });
      expect(waits).toEqual({ plain: false, fair: false, semaphore: false });
      expect(calls).toEqual({ isLocked: true, holdCount: 1, unlock: 'released', permits: 0 });
    } finally {
      worker.child.kill('SIGKILL');
    }
  }, 30_000);
});
