import {
  ClientClosedError,
  LockClient,
  type AcquiredEvent,
  type LockClientEvents,
  type NotAcquiredEvent,
  type ReleasedEvent,
} from '../src';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { LockEvents } from '../src/events';
import { useRedis } from './helpers/setup';
import { eventually, sleep } from './helpers/wait';
import { startRedis, type RedisServer } from './helpers/redis-server';

/** Every acquired / notAcquired / released event of a client, in order. */
function record(client: LockClient): Array<{ event: keyof LockClientEvents; payload: unknown }> {
  const seen: Array<{ event: keyof LockClientEvents; payload: unknown }> = [];
  client.on('acquired', (payload) => seen.push({ event: 'acquired', payload }));
  client.on('notAcquired', (payload) => seen.push({ event: 'notAcquired', payload }));
  client.on('released', (payload) => seen.push({ event: 'released', payload }));
  return seen;
}

const ofType = <E extends keyof LockClientEvents>(
  seen: Array<{ event: keyof LockClientEvents; payload: unknown }>,
  event: E,
): Array<LockClientEvents[E][0]> =>
  seen.filter((entry) => entry.event === event).map((entry) => entry.payload as LockClientEvents[E][0]);

const execFileAsync = promisify(execFile);

describe('LockClient events', () => {
  const redis = useRedis();

  test('an uncontended lock() and unlock() report acquired and released, with the hold time', async () => {
    const client = redis.client();
    const seen = record(client);
    const lock = client.getLock('ev-plain');
    await lock.lock();
    await sleep(120);
    await lock.unlock();
    expect(seen.map((entry) => entry.event)).toEqual(['acquired', 'released']);
    const [acquired] = ofType(seen, 'acquired') as [AcquiredEvent];
    expect(acquired).toMatchObject({
      name: 'ev-plain',
      kind: 'lock',
      contended: false,
      leaseTime: -1,
      ownerId: expect.stringContaining(client.id),
    });
    expect(acquired.waitMs).toBeGreaterThanOrEqual(0);
    expect(acquired.token).toBeUndefined();
    const [released] = ofType(seen, 'released') as [ReleasedEvent];
    expect(released).toMatchObject({
      name: 'ev-plain',
      kind: 'lock',
      ownerId: acquired.ownerId,
      freed: true,
    });
    expect(released.heldMs).toBeGreaterThanOrEqual(100);
  });

  test('re-entry reports each hold; only the last release frees the lock', async () => {
    const client = redis.client();
    const seen = record(client);
    const lock = client.getLock('ev-reentry');
    await lock.lock(5_000);
    await lock.lock(5_000);
    await lock.unlock();
    await lock.unlock();
    expect(seen.map((entry) => entry.event)).toEqual(['acquired', 'acquired', 'released', 'released']);
    expect(ofType(seen, 'acquired').map((event) => event.leaseTime)).toEqual([5_000, 5_000]);
    expect(ofType(seen, 'released').map((event) => event.freed)).toEqual([false, true]);
  });

  test('a wait on another holder is reported as contended, with its wait time', async () => {
    const client = redis.client();
    const holder = client.getLock('ev-contended');
    await holder.lock();
    const seen = record(client);
    const waiter = client.getLock('ev-contended');
    const waiting = waiter.tryLock(10_000);
    await sleep(300);
    await holder.unlock();
    expect(await waiting).toBe(true);
    await waiter.unlock();
    const acquired = ofType(seen, 'acquired');
    expect(acquired).toHaveLength(1);
    expect(acquired[0]?.contended).toBe(true);
    expect(acquired[0]?.waitMs).toBeGreaterThanOrEqual(250);
  });

  test('a wait that runs out, an abort and a close are reported as notAcquired with their reason', async () => {
    const client = redis.client();
    const holder = client.getLock('ev-not');
    await holder.lock();
    const seen = record(client);
    const other = client.getLock('ev-not');

    expect(await other.tryLock()).toBe(false);
    expect(await other.tryLock(150)).toBe(false);
    const controller = new AbortController();
    const aborted = other.lock({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 100);
    await expect(aborted).rejects.toThrow('stop');
    const closing = expect(other.lock()).rejects.toBeInstanceOf(ClientClosedError);
    await sleep(100);
    await client.close();
    await closing;

    const events = ofType(seen, 'notAcquired') as NotAcquiredEvent[];
    expect(events.map((event) => event.reason)).toEqual(['timeout', 'timeout', 'aborted', 'closed']);
    expect(events.every((event) => event.name === 'ev-not' && event.kind === 'lock')).toBe(true);
    expect(events[0]?.error).toBeUndefined();
    expect(events[1]?.waitMs).toBeGreaterThanOrEqual(140);
    expect(events[2]?.error).toEqual(new Error('stop'));
    expect(events[3]?.error).toBeInstanceOf(ClientClosedError);
    expect(ofType(seen, 'acquired')).toHaveLength(0);
    // close() gave back what the holder had.
    expect(ofType(seen, 'released')).toMatchObject([{ name: 'ev-not', freed: true }]);
  });

  test("notAcquired's error is an Error even when the abort reason is not; the call keeps the reason", async () => {
    const client = redis.client();
    await client.getLock('ev-reason').lock();
    const seen = record(client);
    const controller = new AbortController();
    const waiting = client.runInTask(() => client.getLock('ev-reason').lock({ signal: controller.signal }));
    setTimeout(() => controller.abort('shutdown'), 50);
    await expect(waiting).rejects.toBe('shutdown');
    const [event] = ofType(seen, 'notAcquired') as NotAcquiredEvent[];
    expect(event?.reason).toBe('aborted');
    expect(event?.error).toBeInstanceOf(Error);
    expect(event?.error).toMatchObject({ message: 'shutdown', cause: 'shutdown' });
  });

  test('withLock reports one acquisition and one release; a fenced lock reports its token', async () => {
    const client = redis.client();
    const seen = record(client);
    const token = await client.getFencedLock('ev-fenced').withLock(({ token }) => token);
    await client.getFairLock('ev-fair').withLock(() => undefined);
    expect(seen.map((entry) => entry.event)).toEqual(['acquired', 'released', 'acquired', 'released']);
    expect(ofType(seen, 'acquired')).toMatchObject([
      { name: 'ev-fenced', kind: 'fenced', token },
      { name: 'ev-fair', kind: 'fair' },
    ]);
    expect(ofType(seen, 'released')).toMatchObject([
      { name: 'ev-fenced', kind: 'fenced', freed: true },
      { name: 'ev-fair', kind: 'fair', freed: true },
    ]);
  });

  test('a lock deleted under its holder is reported as lost when the release finds it gone', async () => {
    const client = redis.client();
    const lost: Array<LockClientEvents['lockLost'][0]> = [];
    client.on('lockLost', (event) => lost.push(event));
    const body = client.getLock('ev-deleted').withLock(async () => {
      await redis.admin().del('ev-deleted');
    });
    await expect(body).rejects.toMatchObject({ code: 'ERR_LOCK_NOT_HELD' });
    const lock = client.getLock('ev-deleted-by-hand');
    await lock.lock();
    await redis.admin().del('ev-deleted-by-hand');
    await expect(lock.unlock()).rejects.toMatchObject({ code: 'ERR_LOCK_NOT_HELD' });
    expect(lost).toMatchObject([
      { name: 'ev-deleted', code: 'not-in-redis' },
      { name: 'ev-deleted-by-hand', code: 'not-in-redis' },
    ]);
  });

  test('unlock() after a fixed lease ran out does not point to a lockLost event it did not emit', async () => {
    const client = redis.client();
    const lost: Array<LockClientEvents['lockLost'][0]> = [];
    client.on('lockLost', (event) => lost.push(event));
    const lock = client.getLock('ev-lease-ran-out');
    await lock.lock(50);
    await sleep(150);
    const error = await lock.unlock().catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'ERR_LOCK_NOT_HELD' });
    expect((error as Error).message).toMatch(/lease ran out while it was held \(lease-expired\)$/);
    expect(lost).toEqual([]);
  });

  test('a Redis error during an acquisition is reported as notAcquired with the error', async () => {
    const client = redis.client();
    await redis.admin().set('ev-wrongtype', 'not a hash');
    const seen = record(client);
    await expect(client.getLock('ev-wrongtype').tryLock()).rejects.toMatchObject({ code: 'ERR_REDIS_REPLY' });
    expect(ofType(seen, 'notAcquired')).toMatchObject([
      { name: 'ev-wrongtype', reason: 'error', error: expect.objectContaining({ code: 'ERR_REDIS_REPLY' }) },
    ]);
    await redis.admin().del('ev-wrongtype');
  });

  test('builds no event while nobody listens, and stops when the listener goes', async () => {
    const acquisition = jest.spyOn(LockEvents.prototype, 'acquisition');
    const released = jest.spyOn(LockEvents.prototype, 'released');
    try {
      const client = redis.client();
      const lock = client.getLock('ev-quiet');
      await lock.withLock(() => undefined);
      expect(acquisition).not.toHaveBeenCalled();
      expect(released).not.toHaveBeenCalled();
      const listener = (): undefined => undefined;
      client.on('released', listener);
      await lock.withLock(() => undefined);
      expect(acquisition).not.toHaveBeenCalled();
      expect(released).toHaveBeenCalledTimes(1);
      client.off('released', listener);
      client.once('acquired', listener);
      await lock.withLock(() => undefined);
      await lock.withLock(() => undefined);
      expect(acquisition).toHaveBeenCalledTimes(1);
      expect(released).toHaveBeenCalledTimes(1);
    } finally {
      acquisition.mockRestore();
      released.mockRestore();
    }
  });

  test('a listener that throws does not fail the lock call: its error is thrown on its own', async () => {
    const worker = resolve(__dirname, 'workers', 'throwing-listener-worker.ts');
    const { stdout } = await execFileAsync(process.execPath, [
      '--import',
      'tsx',
      worker,
      String(redis.port()),
    ]);
    expect(JSON.parse(stdout)).toEqual({ acquired: true, held: true, uncaught: ['listener bug'] });
  });
});

describe('LockClient events of group locks', () => {
  let servers: RedisServer[] = [];
  let clients: LockClient[] = [];

  beforeAll(async () => {
    servers = await Promise.all([startRedis(), startRedis(), startRedis()]);
  });
  beforeEach(() => {
    clients = servers.map((server) => new LockClient(server.connect(), { watchdogTimeout: 3_000 }));
  });
  afterEach(async () => {
    await Promise.all(clients.map((client) => client.close()));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  test('a MultiLock and a RedLock report for the group, not for each member', async () => {
    const [a, b, c] = clients as [LockClient, LockClient, LockClient];
    const seen = clients.map(record);
    const multi = a.getMultiLock(a.getLock('g-1'), a.getLock('g-2'));
    await multi.withLock(() => sleep(50));
    const red = a.getRedLock(a.getLock('g-red'), b.getLock('g-red'), c.getLock('g-red'));
    expect(await red.tryLock(1_000)).toBe(true);
    await red.unlock();

    expect(seen[1]).toEqual([]);
    expect(seen[2]).toEqual([]);
    const events = seen[0] ?? [];
    expect(events.map((entry) => entry.event)).toEqual(['acquired', 'released', 'acquired', 'released']);
    expect(ofType(events, 'acquired')).toMatchObject([
      { name: 'MultiLock(g-1, g-2)', kind: 'multi', contended: false },
      { name: 'RedLock(g-red, g-red, g-red)', kind: 'red', contended: false },
    ]);
    const releases = ofType(events, 'released');
    expect(releases).toMatchObject([
      { name: 'MultiLock(g-1, g-2)', kind: 'multi', freed: true },
      { name: 'RedLock(g-red, g-red, g-red)', kind: 'red', freed: true },
    ]);
    expect(releases[0]?.heldMs).toBeGreaterThanOrEqual(40);
  });

  test('a group that waits for a member held elsewhere is contended; one that gives up is notAcquired', async () => {
    const [a, b] = clients as [LockClient, LockClient];
    const seen = record(a);
    const blocker = b.getLock('g-held');
    await blocker.lock();
    const multi = a.getMultiLock(a.getLock('g-free'), b.getLock('g-held'));
    expect(await multi.tryLock(200)).toBe(false);
    const waiting = multi.tryLock(5_000);
    await sleep(300);
    await blocker.unlock();
    expect(await waiting).toBe(true);
    await multi.unlock();
    expect(seen.map((entry) => entry.event)).toEqual(['notAcquired', 'acquired', 'released']);
    expect(ofType(seen, 'notAcquired')).toMatchObject([{ kind: 'multi', reason: 'timeout' }]);
    expect(ofType(seen, 'acquired')).toMatchObject([{ kind: 'multi', contended: true }]);
  });

  test('a close() during a group wait gives back the members it took without reporting them', async () => {
    const [a] = clients as [LockClient];
    const seen = record(a);
    const admin = (servers[0] as RedisServer).connect();
    const other = new LockClient((servers[0] as RedisServer).connect());
    try {
      await other.getLock('g-blocked').lock();
      const multi = a.getMultiLock(a.getLock('g-blocked'), a.getLock('g-taken'));
      const waiting = multi.lock().catch((error: unknown) => error);
      // A round holds the free member while it waits for the other (up to 1.5 s a member).
      await eventually('the free member taken', async () => (await admin.exists('g-taken')) === 1);
      await a.close();
      expect(await waiting).toBeInstanceOf(ClientClosedError);
      expect(await admin.exists('g-taken')).toBe(0);
      expect(seen.map((entry) => `${entry.event} ${(entry.payload as { name: string }).name}`)).toEqual([
        'notAcquired MultiLock(g-blocked, g-taken)',
      ]);
    } finally {
      await other.close();
    }
  });
});
