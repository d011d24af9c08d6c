import { LUA_SCRIPTS, type LockClient, type RLock } from '../library';
import { toBytes } from '../redis/bytes';
import { sha1 } from '../redis/lua';
import type { TeeConnection } from './tee';

/**
 * What the agreement test asks of the library on its tee connection: every kind the simulation
 * runs on one server, through the paths its workloads take (acquire, re-entry, contention, waits
 * that end by a release, a hand-off, a timeout or an abort, fixed leases that run out, releases,
 * the synchronizers' counts), SCRIPT FLUSH between calls, and copies of calls as a re-send after a
 * lost reply makes them.
 */
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function agreementWorkload(
  client: LockClient,
  hasty: LockClient,
  tee: TeeConnection,
): Promise<void> {
  await locks(client, tee);
  await wakeupPassedOn(client, tee);
  await late(client, hasty, tee);
  await tee.flushScripts();
  await fairLock(client);
  await readWrite(client, tee);
  await tee.flushScripts();
  await synchronizers(client, tee);
}

/** Another owner's wait: it takes the lock, holds it a moment and gives it back. */
function briefly(client: LockClient, lock: RLock, waitTime: number): Promise<boolean> {
  return client.runInTask(async () => {
    const held = await lock.tryLock(waitTime, 5_000).catch(() => false);
    if (held) {
      await sleep(10);
      await lock.unlock();
    }
    return held;
  });
}

/** How many times the script of `file` (e.g. 'lock/wait.lua') ran through the tee so far. */
function runsOf(tee: TeeConnection, file: string): number {
  const text = LUA_SCRIPTS[file];
  if (text === undefined) throw new Error(`no script ${file}`);
  return tee.scriptRuns.get(sha1(toBytes(text))) ?? 0;
}

/** Waits until `file` ran more than `before` times: steps that depend on timing happen for sure. */
async function ranAgain(tee: TeeConnection, file: string, before: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (runsOf(tee, file) <= before) {
    if (Date.now() > deadline) throw new Error(`${file} did not run within 10 s`);
    await sleep(5);
  }
}

/**
 * A getLock release that woke a waiting client is watched, and one hand-off timeout later the
 * wake-up is passed on (lock/pass-on.lua). The release comes only once the waiter's wait script
 * ran, so that it wakes a client whatever the machine's pace.
 */
async function wakeupPassedOn(client: LockClient, tee: TeeConnection): Promise<void> {
  const lock = client.getLock('a:woken');
  const waits = runsOf(tee, 'lock/wait.lua');
  const passes = runsOf(tee, 'lock/pass-on.lua');
  await client.runInTask(async () => {
    await lock.lock(5_000);
    const other = briefly(client, lock, 5_000);
    await ranAgain(tee, 'lock/wait.lua', waits);
    await lock.unlock();
    await other;
  });
  await ranAgain(tee, 'lock/pass-on.lua', passes);
}

async function locks(client: LockClient, tee: TeeConnection): Promise<void> {
  for (const lock of [
    client.getLock('a:lock'),
    client.getFencedLock('a:fenced'),
    client.getSpinLock('a:spin'),
  ]) {
    await lock.withLock(() => lock.withLock(() => sleep(5)));
    await client.runInTask(async () => {
      await lock.lock(5_000);
      // Another owner meets it held, waits, and gets it once it is released.
      const other = briefly(client, lock, 2_000);
      await sleep(30);
      await lock.unlock();
      await other;
    });
    await client.runInTask(async () => {
      // Copies of an acquire and of a release, as ioredis sends them after a lost reply.
      tee.copyNext = 1;
      if (await lock.tryLock(0, 150)) {
        tee.copyNext = 1;
        await lock.unlock();
      }
    });
    await client.runInTask(async () => {
      // A fixed lease runs out; another owner takes the lock after it.
      await lock.lock(150);
      await sleep(250);
    });
    await briefly(client, lock, 100);
    await client.runInTask(async () => {
      await lock.lock(1_000);
      await lock.forceUnlock();
    });
    await lock.isLocked();
  }
}

/**
 * Calls whose answers come after their callers gave up (`hasty` has a short commandTimeout): the
 * library withdraws them, and gives back what they took. The watchdog renews a lock held long.
 */
async function late(client: LockClient, hasty: LockClient, tee: TeeConnection): Promise<void> {
  const lock = hasty.getLock('a:late');
  const rw = hasty.getReadWriteLock('a:late-rw', { writerPreference: true });
  await client.getSemaphore('a:late-semaphore').trySetPermits(1);
  const semaphore = hasty.getSemaphore('a:late-semaphore');
  // Its request windows read the server's clock first: that reading is not the call delayed below.
  await semaphore.tryAcquire();
  await semaphore.release();
  for (const attempt of [
    () => lock.tryLock(),
    () => rw.readLock().tryLock(),
    () => rw.writeLock().tryLock(),
    () => semaphore.tryAcquire(),
  ]) {
    tee.delayNext = 300;
    await hasty.runInTask(attempt).catch(() => undefined);
    await sleep(400);
  }
  // A writer of a writer-preferring lock that gives up its wait leaves its place.
  await client.runInTask(async () => {
    const shared = client.getReadWriteLock('a:late-rw', { writerPreference: true });
    await shared.readLock().lock();
    await client.runInTask(() => shared.writeLock().tryLock(100));
    await shared.readLock().unlock();
  });
  const watched = client.getLock('a:watched');
  await watched.lock();
  await sleep(800);
  await watched.unlock();
}

async function fairLock(client: LockClient): Promise<void> {
  const lock = client.getFairLock('a:fair');
  await client.runInTask(async () => {
    await lock.lock();
    // Two waiters queue and are handed the lock in turn; a third gives up. Held past one refresh
    // of the places (fairLockWaitTimeout / 3, 200 ms here): not in a race with it.
    const waiters = [briefly(client, lock, 3_000), briefly(client, lock, 3_000), briefly(client, lock, 100)];
    await sleep(350);
    await lock.unlock();
    await Promise.all(waiters);
  });
  const controller = new AbortController();
  await client.runInTask(async () => {
    await lock.lock();
    const aborted = client.runInTask(() => lock.tryLock({ waitTime: 2_000, signal: controller.signal }));
    await sleep(50);
    controller.abort(new Error('gave up'));
    await aborted.catch(() => undefined);
    await lock.unlock();
  });
  await client.runInTask(async () => {
    await lock.lock(1_000);
    await lock.forceUnlock();
  });
}

async function readWrite(client: LockClient, tee: TeeConnection): Promise<void> {
  for (const writerPreference of [false, true]) {
    const rw = client.getReadWriteLock(`a:rw:${String(writerPreference)}`, { writerPreference });
    await client.runInTask(async () => {
      await rw.readLock().lock();
      const others = [briefly(client, rw.readLock(), 1_000), briefly(client, rw.writeLock(), 1_000)];
      await sleep(50);
      await rw.readLock().unlock();
      await Promise.all(others);
    });
    await client.runInTask(async () => {
      // A downgrade: the writer takes the read lock too, then releases the write lock.
      await rw.writeLock().lock();
      tee.copyNext = 1;
      await rw.readLock().lock();
      await rw.writeLock().unlock();
      await rw.readLock().unlock();
    });
    await client.runInTask(async () => {
      await rw.writeLock().lock(1_000);
      await rw.writeLock().forceUnlock();
    });
  }
}

async function synchronizers(client: LockClient, tee: TeeConnection): Promise<void> {
  const semaphore = client.getSemaphore('a:semaphore');
  await semaphore.trySetPermits(2);
  tee.copyNext = 1;
  await semaphore.acquire(1);
  await semaphore.tryAcquire(2, 100);
  tee.copyNext = 1;
  await semaphore.release(1);
  await semaphore.addPermits(1);
  await semaphore.drainPermits();
  await semaphore.addPermits(2);
  await semaphore.availablePermits();

  const expirable = client.getPermitExpirableSemaphore('a:expirable');
  await expirable.trySetPermits(2);
  tee.copyNext = 1;
  const id = await expirable.acquire({ leaseTime: 5_000 });
  const short = await expirable.tryAcquire({ waitTime: 0, leaseTime: 150 });
  await expirable.updateLeaseTime(id, 4_000);
  await expirable.tryAcquire({ waitTime: 100 });
  await sleep(250);
  await expirable.availablePermits();
  tee.copyNext = 1;
  await expirable.release(id);
  if (short !== null) await expirable.tryRelease(short);

  const latch = client.getCountDownLatch('a:latch');
  await latch.trySetCount(2);
  const opened = latch.await({ waitTime: 2_000 });
  tee.copyNext = 1;
  await latch.countDown();
  await latch.countDown();
  await opened;
  await latch.trySetCount(1);
  await latch.delete();
}
