import { execFile, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { getEventListeners } from 'node:events';
import { ClientClosedError, LockClient } from '../src';
import { watch } from '../src/cli/watch';
import { startCluster, type RedisClusterServers } from './helpers/redis-cluster';
import { freePort } from './helpers/redis-server';
import { MASTER_NAME, startSentinelDeployment, type SentinelDeployment } from './helpers/redis-sentinel';
import { useRedis } from './helpers/setup';
import { eventually, sleep, timed } from './helpers/wait';
import { startWorker } from './helpers/workers';
import { WITHOUT_PUBSUB } from './helpers/without-pubsub';

/** The built command, run as a user runs it (npm test builds dist/ first). */
const COMMAND = resolve(__dirname, '..', 'dist', 'cli.cjs');

interface Outcome {
  status: number;
  stdout: string;
  stderr: string;
}

function rlock(args: string[], env: Record<string, string> = {}): Promise<Outcome> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [COMMAND, ...args],
      { env: { ...process.env, REDIS_URL: '', ...env }, timeout: 20_000 },
      (error, stdout, stderr) => {
        const status = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ status, stdout, stderr });
      },
    );
  });
}

/** `rlock watch` as a child process: its stdout lines and stderr as they come, and Ctrl-C. */
function startWatch(args: string[]): {
  lines: string[];
  stderr: () => string;
  interrupt: () => Promise<number | null>;
} {
  const child = spawn(process.execPath, [COMMAND, 'watch', ...args], {
    env: { ...process.env, REDIS_URL: '' },
  });
  const lines: string[] = [];
  let buffer = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const complete = buffer.split('\n');
    buffer = complete.pop() as string;
    lines.push(...complete);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', done));
  return {
    lines,
    stderr: () => stderr,
    interrupt: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

beforeAll(() => {
  if (!existsSync(COMMAND))
    throw new Error('dist/cli.cjs is missing: run `npm run build` (npm test does it first)');
});

describe('rlock command line', () => {
  test('--help and --version answer without Redis', async () => {
    const help = await rlock(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/rlock inspect <name>/);
    expect((await rlock(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  test.each([
    [['frobnicate'], /unknown command "frobnicate"/],
    [['inspect'], /inspect needs a lock name/],
    [['list', '--jsn'], /Unknown option '--jsn'/],
    [['inspect', 'x', '--redis', 'http://localhost'], /invalid --redis URL "http:\/\/localhost"/],
    [['inspect', 'x', '--redis', 'redis://localhost:6379/x'], /"x" is not a database number/],
    [['inspect', 'x', '--redis', 'redis+sentinel://localhost:26379'], /expected redis\+sentinel:\/\//],
    [['watch', 'x', '--interval', '0'], /--interval must be a whole number from 1 to 86400000/],
    [['inspect', 'x', '--timeout', '0'], /--timeout must be a whole number from 1 to 86400000/],
    // 2^31 ms and more would make Node's timers fire at once.
    [['inspect', 'x', '--timeout', '2147483648'], /--timeout must be a whole number from 1 to 86400000/],
    [['inspect', 'x', '--timeout', '1.5'], /--timeout must be a whole number/],
  ])('a wrong command line %j exits 2 with one line', async (args, message) => {
    const outcome = await rlock(args);
    expect(outcome.status).toBe(2);
    expect(outcome.stderr).toMatch(message);
    expect(outcome.stderr.trim().split('\n')).toHaveLength(1);
  });

  test('a refused connection exits 1 with one line saying why, and hides the password', async () => {
    const port = await freePort();
    const outcome = await rlock(['inspect', 'x', '--redis', `redis://user:secret@127.0.0.1:${port}`]);
    expect(outcome.status).toBe(1);
    expect(outcome.stderr.trim()).toBe(
      `rlock: cannot connect to redis://user:***@127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    // With --json the failure is one JSON line too.
    const json = await rlock(['list', '--json', '--redis', `redis://127.0.0.1:${port}`]);
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stderr)).toEqual({
      error: `cannot connect to redis://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
      exitCode: 1,
    });
  });
});

describe('rlock command on a server', () => {
  const redis = useRedis();
  const url = (): string => `redis://127.0.0.1:${redis.port()}`;

  test('inspect names the holder, its hold count, the host and process behind it, and the ttl', async () => {
    const holder = startWorker([String(redis.port()), 'hold', 'orders:42'], { CLIENT_ID: 'billing' });
    try {
      expect(await holder.firstMessage).toBe('locked');
      const text = await rlock(['inspect', 'orders:42', '--redis', url()]);
      expect(text.status).toBe(0);
      expect(text.stdout).toMatch(/^orders:42 {2}lock\n/);
      expect(text.stdout).toMatch(
        new RegExp(
          `billing/[0-9a-f]{16}:\\d+ {2}1 hold {2}billing, pid ${holder.child.pid} on ${hostname()}`,
        ),
      );
      const json = JSON.parse((await rlock(['inspect', 'orders:42', '--redis', url(), '--json'])).stdout);
      expect(json.kinds).toEqual(['lock']);
      expect(json.holders).toEqual([
        expect.objectContaining({
          holds: 1,
          client: expect.objectContaining({ pid: holder.child.pid, label: 'billing' }),
        }),
      ]);
      expect(json.ttlMs).toBeGreaterThan(0);
      expect(json.ttlMs).toBeLessThanOrEqual(30_000);
    } finally {
      holder.child.kill('SIGKILL');
    }
  });

  test('inspect shows re-entries, the fair queue in order with its deadlines, and the fencing token', async () => {
    const client = redis.client({ clientId: 'svc' });
    const fair = client.getFairLock('payout:7');
    await fair.lock();
    await fair.lock();
    const waits = [1, 2].map(() =>
      client.runInTask(async () => {
        const lock = client.getFairLock('payout:7');
        const acquired = await lock.tryLock(10_000);
        if (acquired) await lock.unlock();
        return acquired;
      }),
    );
    await eventually(
      'two queued',
      async () => (await redis.admin().llen('rlock_fair_queue:{payout:7}')) === 2,
    );
    const queued = await redis.admin().lrange('rlock_fair_queue:{payout:7}', 0, -1);
    const state = JSON.parse((await rlock(['inspect', 'payout:7', '--redis', url(), '--json'])).stdout);
    expect(state.kinds).toEqual(['lock', 'fair queue']);
    expect(state.holders).toEqual([
      expect.objectContaining({ ownerId: expect.stringMatching(/^svc\//), holds: 2 }),
    ]);
    expect(state.queue.map((w: { ownerId: string }) => w.ownerId)).toEqual(queued);
    for (const waiter of state.queue) {
      expect(waiter.placeExpiresInMs).toBeGreaterThan(0);
      expect(waiter.placeExpiresInMs).toBeLessThanOrEqual(10_000);
      expect(waiter.client).toEqual(expect.objectContaining({ pid: process.pid, label: 'svc' }));
      // Its hand-off goes to its client's own channel, where that client listens.
      expect(waiter.hearsOn).toBe(`rlock_client__channel:{${client.id}}`);
    }
    expect(state.listeners).toEqual({ [`rlock_client__channel:{${client.id}}`]: 1 });
    await fair.unlock();
    await fair.unlock();
    expect(await Promise.all(waits)).toEqual([true, true]);

    const token = await client.getFencedLock('leader').lockAndGetToken();
    const fenced = JSON.parse((await rlock(['inspect', 'leader', '--redis', url(), '--json'])).stdout);
    expect(fenced.fencingToken).toBe(token);
    const text = (await rlock(['inspect', 'leader', '--redis', url()])).stdout;
    expect(text).toContain(`token      ${token}`);
  });

  test('inspect shows a pending hand-off and the fair waiters passed over', async () => {
    const admin = redis.admin();
    const now = Number((await admin.time())[0]) * 1000;
    await admin.rpush('rlock_fair_queue:{turns}', 'gone:1', 'next:1');
    await admin.zadd('rlock_fair_deadlines:{turns}', now + 9_000, 'gone:1', now + 9_000, 'next:1');
    await admin.hset('turns', 'next:1', '1');
    await admin.pexpire('turns', 1_000);
    await admin.hset('rlock_fair_handoff:{turns}', '', 'next:1', 'gone:1', 's');
    const state = JSON.parse((await rlock(['inspect', 'turns', '--redis', url(), '--json'])).stdout);
    expect(state.handoffTo).toBe('next:1');
    expect(state.queue).toEqual([
      expect.objectContaining({ ownerId: 'gone:1', passedOver: true }),
      expect.not.objectContaining({ passedOver: true }),
    ]);
    const text = (await rlock(['inspect', 'turns', '--redis', url()])).stdout;
    expect(text).toMatch(/1\. gone:1 .*passed over \(its hand-off ran out unconfirmed\)/);
    expect(text).toContain('to next:1, not confirmed yet');
  });

  test('inspect of a free name, a counter and a key that is not a lock', async () => {
    await redis.admin().set('permits', '3');
    await redis.admin().rpush('a-list', 'x');
    expect((await rlock(['inspect', 'free-name', '--redis', url()])).stdout).toBe(
      'free-name  nothing here (free)\n',
    );
    expect((await rlock(['inspect', 'permits', '--redis', url()])).stdout).toMatch(/value {6}3 /);
    expect((await rlock(['inspect', 'a-list', '--redis', url()])).stdout).toMatch(/list \(not a lock\)/);
  });

  test('list finds locks, queues and counters by pattern, with SCAN and never KEYS', async () => {
    const client = redis.client();
    await client.getLock('list:a').lock();
    await client.getFencedLock('list:b').lockAndGetToken();
    await client.getFairLock('list:c').lock();
    const waiting = client.runInTask(() => client.getFairLock('list:c').tryLock(5_000)).catch(() => false);
    await eventually('queued', async () => (await redis.admin().llen('rlock_fair_queue:{list:c}')) === 1);
    await redis.admin().set('list:d', '5');
    await redis.admin().hset('list:app-hash', 'field', 'value');
    await redis.resetStats();
    const listed = JSON.parse((await rlock(['list', 'list:*', '--redis', url(), '--json'])).stdout);
    expect(listed.map((item: { name: string; kinds: string[] }) => [item.name, item.kinds])).toEqual([
      ['list:a', ['lock']],
      ['list:b', ['lock', 'fencing counter']],
      ['list:c', ['lock', 'fair queue']],
      ['list:d', ['semaphore or count-down latch (an integer)']],
    ]);
    expect(listed[2]).toEqual(expect.objectContaining({ holders: 1, waiters: 1 }));
    expect(await redis.commandCalls('keys')).toBe(0);
    expect(await redis.commandCalls('scan')).toBeGreaterThan(0);
    expect((await rlock(['list', 'nothing:*', '--redis', url()])).stdout).toBe('nothing found\n');
    await client.close();
    await waiting;
  });

  test('inspect and list show semaphores made by the library, and never their request latches', async () => {
    const client = redis.client();
    const semaphore = client.getPermitExpirableSemaphore('cli:pes');
    await semaphore.trySetPermits(2);
    const id = await semaphore.acquire({ leaseTime: 60_000 });
    await client.getSemaphore('cli:sem').release(3);
    const state = JSON.parse((await rlock(['inspect', 'cli:pes', '--redis', url(), '--json'])).stdout);
    expect(state.counter).toBe(1);
    expect(state.expirablePermits).toEqual([expect.objectContaining({ id })]);
    const text = (await rlock(['inspect', 'cli:pes', '--redis', url()])).stdout;
    expect(text).toMatch(new RegExp(`^ {2}permits {4}${id} {2}returns in [\\d.]+ s$`, 'm'));
    const listed = JSON.parse((await rlock(['list', 'cli:*', '--redis', url(), '--json'])).stdout);
    expect(listed.map((item: { name: string }) => item.name)).toEqual(['cli:pes', 'cli:sem']);
  });

  test("list shows a read-write lock once, not its timeout keys nor its writers' places", async () => {
    const client = redis.client();
    await client.getReadWriteLock('rwl:a').readLock().lock();
    await client.runInTask(() => client.getReadWriteLock('rwl:a').readLock().lock());
    const writing = client
      .getReadWriteLock('rwl:a', { writerPreference: true })
      .writeLock()
      .tryLock(5_000)
      .catch((error: unknown) => error);
    await eventually(
      'the writer waits',
      async () => (await redis.admin().zcard('rlock_rwlock_writers:{rwl:a}')) === 1,
    );
    const listed = JSON.parse((await rlock(['list', '*', '--redis', url(), '--json'])).stdout);
    expect(listed.map((item: { name: string; kinds: string[] }) => [item.name, item.kinds])).toEqual([
      ['rwl:a', ['read-write lock']],
    ]);
    await client.close();
    expect(await writing).toBeInstanceOf(ClientClosedError);
  });

  test('list shows every held lock: explicit owner ids, many readers, a Redisson hold; not an app hash', async () => {
    const client = redis.client();
    await client.runInTask(() => client.getLock('held:explicit').lock(), { ownerId: 'orders:job-42' });
    const readers = client.getReadWriteLock('held:readers');
    for (let i = 0; i < 40; i += 1) await client.runInTask(() => readers.readLock().lock());
    expect(await redis.admin().hlen('held:readers')).toBeGreaterThan(64); // 40 owners, 40 marks, mode
    await redis.admin().hset('held:redisson', '8d2bdb8c-0d4c-4b0e-9f55-4d9e2c1a7b11:1', '1');
    await redis.admin().hset('held:stats', 'views', '10', 'visits', '3');
    await redis
      .admin()
      .hset('held:big', Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`f${i}`, 'x'])));
    const listed = JSON.parse((await rlock(['list', 'held:*', '--redis', url(), '--json'])).stdout);
    expect(
      listed.map((item: { name: string; kinds: string[]; holders: number }) => [
        item.name,
        item.kinds,
        item.holders,
      ]),
    ).toEqual([
      ['held:explicit', ['lock'], 1],
      ['held:readers', ['read-write lock'], 40],
      ['held:redisson', ['lock'], 1],
    ]);
    await client.close();
  });

  test('force-unlock asks first, deletes with --yes and wakes a waiter in another process', async () => {
    const client = redis.client();
    const lock = client.getLock('stuck');
    await lock.lock();
    const waiter = startWorker([String(redis.port()), 'wait', 'stuck', '60000']);
    try {
      expect(await waiter.firstMessage).toBe('started');
      await sleep(200);
      // No terminal to ask on, and no --yes: nothing happens.
      const refused = await rlock(['force-unlock', 'stuck', '--redis', url()]);
      expect(refused.status).toBe(2);
      expect(refused.stderr).toMatch(/without a terminal, pass --yes/);
      expect(await lock.isLocked()).toBe(true);

      const startedAt = performance.now();
      const done = await rlock(['force-unlock', 'stuck', '--redis', url(), '--yes']);
      expect(done).toEqual(
        expect.objectContaining({ status: 0, stdout: 'unlocked "stuck"; its waiters were woken\n' }),
      );
      // Woken by the release message, not by the holder's 30 s lease running out.
      await eventually('the waiter took it', async () => (await redis.admin().llen('stuck:order')) === 1);
      expect(performance.now() - startedAt).toBeLessThan(5_000);
    } finally {
      waiter.child.kill('SIGKILL');
    }
    const nothing = await rlock(['force-unlock', 'no-such-lock', '--redis', url(), '--yes']);
    expect(nothing.status).toBe(3);
    expect(nothing.stderr).toMatch(/nothing to unlock/);
  });

  test("inspect shows a read-write lock's mode, readers and writer; force-unlock wakes its waiters", async () => {
    const client = redis.client({ clientId: 'rw-cli' });
    const rw = client.getReadWriteLock('rw-stuck');
    await rw.writeLock().lock();
    await rw.readLock().lock();
    const state = JSON.parse((await rlock(['inspect', 'rw-stuck', '--redis', url(), '--json'])).stdout);
    expect(state).toEqual(expect.objectContaining({ kinds: ['read-write lock'], mode: 'write' }));
    expect(
      state.holders
        .map((holder: { write?: boolean; holds: number }) => [holder.write === true, holder.holds])
        .sort(),
    ).toEqual([
      [false, 1],
      [true, 1],
    ]);
    const waiter = startWorker([String(redis.port()), 'wait', 'rw-stuck', '1'], { LOCK_KIND: 'read' });
    try {
      expect(await waiter.firstMessage).toBe('started');
      await sleep(200);
      const startedAt = performance.now();
      const done = await rlock(['force-unlock', 'rw-stuck', '--redis', url(), '--yes']);
      expect(done.status).toBe(0);
      // Woken on redisson_rwlock:{rw-stuck}, not by the holder's 30 s lease running out.
      await eventually('the reader took it', async () => (await redis.admin().llen('rw-stuck:order')) === 1);
      expect(performance.now() - startedAt).toBeLessThan(5_000);
    } finally {
      waiter.child.kill('SIGKILL');
    }
  });

  test('inspect shows a writer-preferring read-write lock and the writers waiting on it', async () => {
    const client = redis.client();
    await client.getReadWriteLock('rw-pref').readLock().lock();
    const writer = client.getReadWriteLock('rw-pref', { writerPreference: true }).writeLock();
    const waiting = writer.tryLock(10_000);
    await eventually(
      'the writer waits',
      async () => (await redis.admin().zcard('rlock_rwlock_writers:{rw-pref}')) === 1,
    );
    const state = JSON.parse((await rlock(['inspect', 'rw-pref', '--redis', url(), '--json'])).stdout);
    expect(state).toEqual(expect.objectContaining({ mode: 'read', writerPreference: true }));
    expect(state.waitingWriters).toEqual([
      expect.objectContaining({
        ownerId: expect.stringMatching(/:write$/),
        placeExpiresInMs: expect.any(Number),
      }),
    ]);
    expect(state.waitingWriters[0].client).toEqual(expect.objectContaining({ pid: process.pid }));
    const text = (await rlock(['inspect', 'rw-pref', '--redis', url()])).stdout;
    expect(text).toMatch(/preference +writers/);
    expect(text).toMatch(/writers +\S+:write +waiting, place kept for/);
    await client.getReadWriteLock('rw-pref').readLock().forceUnlock();
    expect(await waiting).toBe(true);
  });

  test('force-unlock of a fair lock hands it to the next in line', async () => {
    const holder = redis.client();
    await holder.getFairLock('fair-stuck').lock();
    const next = redis.client();
    const waiting = next.getFairLock('fair-stuck').tryLock(20_000);
    await eventually('queued', async () => (await redis.admin().llen('rlock_fair_queue:{fair-stuck}')) === 1);
    expect((await rlock(['force-unlock', 'fair-stuck', '--redis', url(), '--yes'])).status).toBe(0);
    expect(await waiting).toBe(true);
  });

  test('a keyPrefix the services use is honoured with --key-prefix', async () => {
    const prefixed = redis.client({}, redis.connect({ keyPrefix: 'svc:' }));
    await prefixed.getLock('prefixed').lock();
    const found = JSON.parse(
      (await rlock(['inspect', 'prefixed', '--redis', url(), '--key-prefix', 'svc:', '--json'])).stdout,
    );
    expect(found.holders).toHaveLength(1);
    const listed = JSON.parse(
      (await rlock(['list', 'pre*', '--redis', url(), '--key-prefix', 'svc:', '--json'])).stdout,
    );
    expect(listed).toEqual([expect.objectContaining({ name: 'prefixed', kinds: ['lock'] })]);
    // Without --key-prefix the listing says where the prefixed clients keep their keys.
    const unprefixed = await rlock(['list', '--redis', url()]);
    expect(unprefixed.status).toBe(0);
    expect(unprefixed.stderr).toMatch(/list them with --key-prefix 'svc:'/);
  });

  test('watch prints the state again when it changes, and Ctrl-C ends it', async () => {
    const client = redis.client();
    const lock = client.getLock('watched');
    await lock.lock();
    const watching = startWatch(['watched', '--redis', url(), '--json', '--interval', '5000']);
    const { lines } = watching;
    await eventually('first view', async () => lines.length === 1);
    expect(JSON.parse(lines[0] as string).holders).toHaveLength(1);
    // Its own subscription is not a client waiting for the lock.
    expect(JSON.parse(lines[0] as string).listeners).toEqual({});
    const releasedAt = performance.now();
    await lock.unlock();
    await eventually('second view', async () => lines.length === 2);
    // The release message woke it, not the 5 s interval.
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    expect(JSON.parse(lines[1] as string).holders).toHaveLength(0);
    expect(await watching.interrupt()).toBe(0);
  });

  test('watch shows 30 changes and more without adding a listener per redraw', async () => {
    const client = redis.client();
    const lock = client.getLock('busy');
    const watching = startWatch(['busy', '--redis', url(), '--json', '--interval', '20']);
    await eventually('first view', async () => watching.lines.length === 1);
    for (let change = 0; change < 30; change += 1) {
      const seen = watching.lines.length;
      if (change % 2 === 0) await lock.lock();
      else await lock.unlock();
      // A watch that stops printing says why: what it printed last goes with the failure.
      await eventually(`view ${change + 2}`, async () => watching.lines.length > seen).catch(
        (error: Error) => {
          const last = watching.lines.slice(-3).join('\n');
          throw new Error(`${error.message}; it printed last:\n${last}\nstderr: ${watching.stderr()}`);
        },
      );
    }
    expect(watching.lines.length).toBeGreaterThanOrEqual(31);
    expect(await watching.interrupt()).toBe(0);
    // Node warns from the eleventh listener on one AbortSignal.
    expect(watching.stderr()).not.toMatch(/MaxListenersExceededWarning/);
    expect(watching.stderr()).toBe('');
  });

  test('watch keeps one listener on its stop signal however many times it looks', async () => {
    const stop = new AbortController();
    let looks = 0;
    let listenersAt30 = -1;
    // Connected and lazy, as the command's own connection is (its subscriber is a duplicate).
    const connection = redis.server().connect({ lazyConnect: true });
    await connection.connect();
    const watching = watch(connection, 'looked-at', '', {
      json: false,
      intervalMs: 5,
      timeoutMs: 1_000,
      stop: stop.signal,
      reconnect: () => Promise.reject(new Error('not needed')),
      write: () => {
        looks += 1;
        if (looks === 30) {
          listenersAt30 = getEventListeners(stop.signal, 'abort').length;
          stop.abort();
        }
      },
    });
    await watching;
    expect(looks).toBe(30);
    expect(listenersAt30).toBe(1);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });

  test('watch rides out a Redis restart: it says so, then shows the lock taken after it', async () => {
    await redis.client().getLock('restarted').lock();
    const watching = startWatch(['restarted', '--redis', url(), '--json', '--interval', '200']);
    const { lines } = watching;
    const events = (): Array<Record<string, unknown>> => lines.map((line) => JSON.parse(line));
    await eventually('first view', async () => lines.length === 1);
    expect(events()[0]).toMatchObject({ kinds: ['lock'], holders: [expect.anything()] });
    await redis.server().down();
    await eventually('outage reported', async () => events().some((line) => line.event === 'unreachable'));
    expect(events()[1]).toMatchObject({
      event: 'unreachable',
      error: 'the connection closed',
      retryInMs: 200,
    });
    // Still down for a while: it keeps trying, and says nothing more meanwhile.
    await sleep(1_000);
    expect(lines).toHaveLength(2);
    await redis.server().up();
    await eventually('back', async () => events().some((line) => line.event === 'reconnected'), 5_000);
    // The restart lost the data (no persistence): the name is shown free, then taken again.
    await eventually('the free name after the restart', async () => events().length === 4);
    expect(events()[3]).toMatchObject({ kinds: [], holders: [] });
    const holder = redis.client({ clientId: 'after-restart' });
    await holder.getLock('restarted').lock();
    await eventually('the new holder', async () => events().length === 5);
    expect(events()[4]).toMatchObject({
      kinds: ['lock'],
      holders: [expect.objectContaining({ ownerId: expect.stringMatching(/^after-restart\//) })],
    });
    expect(await watching.interrupt()).toBe(0);
    expect(watching.stderr()).toBe('');
  });

  test('every command gives up on a paused server within --timeout, exit 1 and one line', async () => {
    await redis.client().getLock('paused').lock();
    redis.server().freeze();
    try {
      const outcomes = await Promise.all(
        [
          ['inspect', 'paused'],
          ['list'],
          ['watch', 'paused'],
          ['force-unlock', 'paused', '--yes'],
          ['doctor'],
        ].map((args) => timed(rlock([...args, '--redis', url(), '--timeout', '1000']))),
      );
      for (const { ms, value } of outcomes) {
        expect(value?.status).toBe(1);
        expect(value?.stderr).toBe(
          `rlock: Redis at ${url()} did not answer within 1 s (--timeout 1000): it may be paused, overloaded or out of reach\n`,
        );
        // One second of waiting, plus starting node on a busy machine.
        expect(ms).toBeLessThan(3_500);
      }
      const json = await rlock(['inspect', 'paused', '--redis', url(), '--timeout', '500', '--json']);
      expect(JSON.parse(json.stderr)).toEqual({
        error: expect.stringMatching(/did not answer within 0\.5 s/),
        exitCode: 1,
      });
    } finally {
      redis.server().thaw();
    }
  });

  test('the default --timeout is 5 s, and --help says so', async () => {
    expect((await rlock(['--help'])).stdout).toMatch(/--timeout <ms> .*\n.*\(default 5000\)/);
    redis.server().freeze();
    try {
      const { ms, value } = await timed(rlock(['inspect', 'x', '--redis', url()]));
      expect(value?.status).toBe(1);
      expect(value?.stderr).toMatch(/did not answer within 5 s/);
      expect(ms).toBeGreaterThanOrEqual(5_000);
      expect(ms).toBeLessThan(7_500);
    } finally {
      redis.server().thaw();
    }
  });
});

describe("rlock on a server without pub/sub (the spin lock's deployments)", () => {
  const redis = useRedis(WITHOUT_PUBSUB);
  const url = (): string => `redis://127.0.0.1:${redis.port()}`;

  test('doctor warns that no lock kind but the spin lock can wait there', async () => {
    const report = JSON.parse((await rlock(['doctor', '--redis', url(), '--json'])).stdout);
    const pubSub = report.findings.find((finding: { topic: string }) => finding.topic === 'pub/sub');
    expect(pubSub).toEqual({
      level: 'warn',
      topic: 'pub/sub',
      text: expect.stringMatching(/^none: PUBLISH and SUBSCRIBE not available .*use getSpinLock/),
    });
  });

  test('inspect and watch show a spin lock with nobody listening', async () => {
    const client = redis.client();
    await client.getSpinLock('spun').lock();
    const inspected = await rlock(['inspect', 'spun', '--redis', url(), '--json']);
    expect(inspected.stderr).toBe('');
    expect(JSON.parse(inspected.stdout)).toMatchObject({ holders: [expect.anything()], listeners: {} });
    const watching = startWatch(['spun', '--redis', url(), '--json', '--interval', '50']);
    await eventually('first view', async () => watching.lines.length === 1);
    expect(JSON.parse(watching.lines[0] as string).holders).toHaveLength(1);
    expect(await watching.interrupt()).toBe(0);
    expect(watching.stderr()).toBe('');
  });
});

describe('rlock doctor', () => {
  // Turning AOF on writes its files under the server's dir: a folder of this file's own.
  const aofDir = `appendonly-doctor-${process.pid}`;
  const redis = useRedis([
    '--maxmemory',
    '100mb',
    '--maxmemory-policy',
    'volatile-lru',
    '--appenddirname',
    aofDir,
  ]);
  const doctorFindings = async (): Promise<Record<string, { level: string; text: string }>> => {
    const report = JSON.parse(
      (await rlock(['doctor', '--redis', `redis://127.0.0.1:${redis.port()}`, '--json'])).stdout,
    );
    return Object.fromEntries(report.findings.map((f: { topic: string }) => [f.topic, f]));
  };

  test('warns about an eviction policy that can drop held locks, and reports the rest', async () => {
    const url = `redis://127.0.0.1:${redis.port()}`;
    const byTopic = await doctorFindings();
    expect(byTopic.eviction).toEqual(
      expect.objectContaining({
        level: 'warn',
        text: expect.stringMatching(/volatile-lru evicts keys with a ttl/),
      }),
    );
    expect(byTopic.version?.text).toMatch(/^Redis \d+\.\d+/);
    expect(byTopic['pub/sub']?.text).toMatch(/^classic/);
    expect(byTopic['round trip']?.text).toMatch(/^PING p50 [\d.]+ ms/);

    await redis.admin().config('SET', 'maxmemory-policy', 'noeviction');
    const text = await rlock(['doctor', '--redis', url]);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^ok {4}eviction {4}maxmemory-policy noeviction/m);
  });

  test('warns when a restart would free every lock (no AOF), and not with appendonly yes', async () => {
    const admin = redis.admin();
    expect((await doctorFindings()).persistence).toEqual({
      level: 'warn',
      topic: 'persistence',
      text: expect.stringMatching(/^off \(appendonly no, no RDB snapshots\): a restart frees every lock/),
    });
    await admin.config('SET', 'save', '3600 1');
    expect((await doctorFindings()).persistence).toEqual(
      expect.objectContaining({
        level: 'warn',
        text: expect.stringMatching(/^RDB snapshots only \(save 3600 1\)/),
      }),
    );
    const [, dir] = (await admin.config('GET', 'dir')) as string[];
    try {
      await admin.config('SET', 'appendonly', 'yes');
      expect((await doctorFindings()).persistence).toEqual(
        expect.objectContaining({
          level: 'ok',
          text: expect.stringMatching(/^appendonly yes \(appendfsync everysec\): a restart keeps the locks/),
        }),
      );
      const text = (await rlock(['doctor', '--redis', `redis://127.0.0.1:${redis.port()}`])).stdout;
      expect(text).toMatch(/^ok {4}persistence {1}appendonly yes/m);
    } finally {
      await admin.config('SET', 'appendonly', 'no');
      await admin.config('SET', 'save', '');
      rmSync(join(dir as string, aofDir), { recursive: true, force: true });
    }
  });
});

describe('rlock command on a cluster and through Sentinel', () => {
  let cluster: RedisClusterServers;
  let sentinel: SentinelDeployment;

  beforeAll(async () => {
    [cluster, sentinel] = await Promise.all([startCluster(), startSentinelDeployment()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([cluster?.stop(), sentinel?.stop()]);
  });

  test('any node of a cluster will do: inspect and list read every key where it lives', async () => {
    const client = new LockClient(cluster.connect());
    try {
      const names = ['c:1', 'c:2', 'c:3', 'c:4', 'c:5', 'c:6'];
      for (const name of names) await client.getLock(name).lock();
      const url = `redis://127.0.0.1:${cluster.nodes[2]?.port}`;
      const state = JSON.parse((await rlock(['inspect', 'c:4', '--redis', url, '--json'])).stdout);
      expect(state.holders).toHaveLength(1);
      const listed = JSON.parse((await rlock(['list', 'c:*', '--redis', url, '--json'])).stdout);
      expect(listed.map((item: { name: string }) => item.name)).toEqual(names);
      const report = JSON.parse((await rlock(['doctor', '--redis', url, '--json'])).stdout);
      expect(report.findings).toContainEqual(
        expect.objectContaining({ topic: 'deployment', text: expect.stringMatching(/^cluster, 3 masters/) }),
      );
    } finally {
      await client.close();
    }
  });

  test('a redis+sentinel:// URL finds the master', async () => {
    const client = new LockClient(sentinel.connect());
    try {
      await client.getLock('through-sentinel').lock();
      const url = `redis+sentinel://127.0.0.1:${sentinel.sentinel.port}/${MASTER_NAME}`;
      const state = JSON.parse(
        (await rlock(['inspect', 'through-sentinel', '--redis', url, '--json'])).stdout,
      );
      expect(state.holders).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});
