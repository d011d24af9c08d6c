/**
 * A competing worker in its own process, with its own connections, as in production.
 * argv: <redisPort> <mode> <lockName> [n]; env LOCK_KIND=fair uses getFairLock, read / write a half of
 * getReadWriteLock (WRITER_PREFERENCE=1 asks for writerPreference), spin getSpinLock; WATCHDOG_TIMEOUT,
 * FAIR_LOCK_WAIT_TIMEOUT and CLIENT_ID set the client options, KEY_PREFIX the connection's
 * keyPrefix, and OWNER_ID runs the mode as that explicit owner (runInTask({ ownerId })).
 *   unlock   releases one hold, reports 'unlocked' (or 'error: ...')
 *   sigterm  holds the lock in withLock until its signal aborts, reports 'locked'; on SIGTERM it
 *            closes the client (close({ timeout: n })) and exits: the shutdown recipe
 *   counter  increments a non-atomic counter in Redis inside withLock, n times, then reports 'done'
 *   hold     takes the lock, reports 'locked', then waits to be killed
 *   wait     reports 'started', takes the lock, appends n to <lockName>:order, releases, 'done'
 *   turn     reports 'started'; on the message 'go' takes the lock, appends n to <lockName>:order and
 *            reports 'locked', holds it HOLD_MS ms (default 50), releases, 'done'; a second holder at
 *            once (another process in its turn) is counted in <lockName>:overlaps, a lost hold ends
 *            in 'error: ...'
 *   giveup   reports 'started'; on the message 'go' waits up to n ms for the lock (tryLock), reports
 *            'gave-up' (or 'got'), then stays alive without waiting, as a service whose request
 *            timed out does
 *   loop     for n ms: lock, append the owner id (as Redis has it) to <lockName>:grants, hold 2 ms,
 *            unlock; counts overlapping holds in <lockName>:overlaps; then reports 'done'
 *   fenced   takes the fenced lock in withLock with the watchdog, reports 'locked:<token>', then
 *            on the message 'write' writes <lockName>:store through the token check and reports
 *            'wrote:<1|0>:aborted:<true|false>'
 *   rw       n times, on the read-write lock: every 4th a write (a non-atomic increment of
 *            <lockName>:counter), else a 2 ms read; counts a writer beside anyone in
 *            <lockName>:overlaps and the most readers at once in <lockName>:readers-max
 * ('go' lets a test start several workers at once and still queue them in the order it chooses.)
 */
import { LockClient } from '../../src';
import { connectTo } from '../helpers/deployment';
import { FENCED_WRITE } from '../helpers/fenced-store';
import { holderIds } from '../helpers/holders';

const [port, mode, name = '', n = '0'] = process.argv.slice(2);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** Reports 'started', then waits for the test's 'go'. */
const startedThenGo = (): Promise<void> =>
  new Promise((resolveGo) => {
    process.on('message', (message) => {
      if (message === 'go') resolveGo();
    });
    process.send?.('started');
  });

async function main(): Promise<void> {
  const ownerId = process.env.OWNER_ID;
  const redis = connectTo(Number(port), { keyPrefix: process.env.KEY_PREFIX });
  // Tests stop and restart the server: the connection reconnects, errors meanwhile are expected.
  redis.on('error', () => undefined);
  const client = new LockClient(redis, {
    watchdogTimeout: Number(process.env.WATCHDOG_TIMEOUT ?? 30_000),
    fairLockWaitTimeout: Number(process.env.FAIR_LOCK_WAIT_TIMEOUT ?? 10_000),
    clientId: process.env.CLIENT_ID,
  });
  const getLock = (): ReturnType<LockClient['getLock']> => {
    const kind = process.env.LOCK_KIND;
    if (kind === 'fair') return client.getFairLock(name);
    if (kind === 'read') return client.getReadWriteLock(name).readLock();
    if (kind === 'write') {
      return client
        .getReadWriteLock(name, { writerPreference: process.env.WRITER_PREFERENCE === '1' })
        .writeLock();
    }
    if (kind === 'spin') return client.getSpinLock(name);
    return client.getLock(name);
  };
  const finish = async (): Promise<void> => {
    await client.close();
    redis.disconnect();
    process.send?.('done');
  };

  /** Runs work as the explicit owner OWNER_ID, or as the lock handle when there is none. */
  const asOwner = (work: () => Promise<void>): Promise<void> =>
    ownerId === undefined ? work() : client.runInTask(work, { ownerId });

  /** Marks the holder in Redis and counts a second holder at once as an overlap. */
  const inside = async (work: () => Promise<void>): Promise<void> => {
    if ((await redis.incr(`${name}:inside`)) > 1) await redis.incr(`${name}:overlaps`);
    await work();
    await redis.decr(`${name}:inside`);
  };

  if (mode === 'counter') {
    for (let i = 0; i < Number(n); i += 1) {
      await getLock().withLock(() =>
        inside(async () => {
          const value = Number((await redis.get(`${name}:counter`)) ?? 0);
          await new Promise((resolve) => setImmediate(resolve));
          await redis.set(`${name}:counter`, value + 1);
        }),
      );
    }
    await finish();
  } else if (mode === 'hold') {
    // Kept referenced: a handle that is garbage-collected while it holds the lock is an orphan.
    const held = getLock();
    await asOwner(() => held.lock());
    process.send?.('locked');
    setInterval(() => void held, 1_000);
  } else if (mode === 'sigterm') {
    process.once('SIGTERM', () => {
      void client.close({ timeout: Number(n) }).then(() => {
        redis.disconnect();
        process.exit(0);
      });
    });
    await getLock().withLock(async ({ signal }) => {
      process.send?.('locked');
      await new Promise((resolveAbort) => signal.addEventListener('abort', resolveAbort));
      await sleep(50); // the body's own clean-up
    });
  } else if (mode === 'unlock') {
    await asOwner(() => getLock().unlock());
    process.send?.('unlocked');
    await finish();
  } else if (mode === 'wait') {
    process.send?.('started');
    const lock = getLock();
    await lock.lock();
    await redis.rpush(`${name}:order`, n);
    await lock.unlock();
    await finish();
  } else if (mode === 'turn') {
    await startedThenGo();
    const lock = getLock();
    await lock.lock();
    await inside(async () => {
      await redis.rpush(`${name}:order`, n);
      process.send?.('locked');
      await sleep(Number(process.env.HOLD_MS ?? 50));
    });
    await lock.unlock();
    await finish();
  } else if (mode === 'giveup') {
    await startedThenGo();
    const lock = getLock();
    // A wait that Redis could not serve for its whole time rejects (RedisUnavailableError): given up too.
    const got = await lock.tryLock(Number(n)).catch(() => false);
    process.send?.(got ? 'got' : 'gave-up');
    setInterval(() => void lock, 1_000);
  } else if (mode === 'fenced') {
    // A 'message' listener keeps the IPC channel, and so the process, alive: it goes with the write.
    let onMessage: ((message: unknown) => void) | undefined;
    const written = new Promise<void>((resolveWrite) => {
      onMessage = (message) => {
        if (message === 'write') resolveWrite();
      };
      process.on('message', onMessage);
    });
    await client
      .getFencedLock(name)
      .withLock(async ({ signal, token }) => {
        process.send?.(`locked:${token}`);
        await written;
        const accepted = await redis.eval(
          FENCED_WRITE,
          1,
          `${name}:store`,
          String(token),
          'from the paused holder',
        );
        process.send?.(`wrote:${accepted}:aborted:${signal.aborted}`);
      })
      .catch(() => undefined)
      .finally(() => process.off('message', onMessage as (message: unknown) => void));
    await finish();
  } else if (mode === 'rw') {
    const rw = client.getReadWriteLock(name);
    for (let i = 0; i < Number(n); i += 1) {
      if (i % 4 === 0) {
        await rw.writeLock().withLock(async () => {
          const others =
            Number(await redis.incr(`${name}:writers`)) + Number((await redis.get(`${name}:reading`)) ?? 0);
          if (others > 1) await redis.incr(`${name}:overlaps`);
          const value = Number((await redis.get(`${name}:counter`)) ?? 0);
          await sleep(1);
          await redis.set(`${name}:counter`, value + 1);
          await redis.decr(`${name}:writers`);
        });
      } else {
        await rw.readLock().withLock(async () => {
          const reading = await redis.incr(`${name}:reading`);
          if (Number((await redis.get(`${name}:writers`)) ?? 0) > 0) await redis.incr(`${name}:overlaps`);
          await redis.eval(
            "if tonumber(redis.call('get', KEYS[1]) or 0) < tonumber(ARGV[1]) then redis.call('set', KEYS[1], ARGV[1]) end",
            1,
            `${name}:readers-max`,
            reading,
          );
          await sleep(2);
          await redis.decr(`${name}:reading`);
        });
      }
    }
    await finish();
  } else if (mode === 'loop') {
    const until = Date.now() + Number(n);
    while (Date.now() < until) {
      await getLock().withLock(() =>
        inside(async () => {
          const [owner] = await holderIds(redis, name);
          await redis.rpush(`${name}:grants`, owner ?? '?');
          await sleep(2);
        }),
      );
    }
    await finish();
  }
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exit(1);
});
