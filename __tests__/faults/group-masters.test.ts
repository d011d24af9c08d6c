import type Redis from 'ioredis';
import { LockClient, RedisUnavailableError, type LockLostEvent, type RLock } from '../../src';
import { FaultProxy } from '../helpers/proxy';
import { callBudget, waitBudget } from '../helpers/budgets';
import { reportFault } from '../helpers/report';
import { startRedis, type RedisServer } from '../helpers/redis-server';
import { eventually, sleep, timed } from '../helpers/wait';

/**
 * RedLock and MultiLock over three independent masters, one of them bad: killed, paused, or
 * answering 3 s late. RedLock decides on a majority without waiting for the bad one; MultiLock
 * fails within its budget. (redlock 5 on the same setup: acquire 5-15 ms, release 1-7 ms.)
 */
const COMMAND_TIMEOUT = 1_000;

/** Blocks the event loop for `ms`, as synchronous work does. */
function blockFor(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

/** Clients of the three masters on connections of their own, warmed up (scripts loaded). */
async function clientsOn(servers: RedisServer[]): Promise<{ connections: Redis[]; clients: LockClient[] }> {
  const connections = servers.map((server) => server.connect());
  const clients = connections.map(
    (connection) => new LockClient(connection, { commandTimeout: COMMAND_TIMEOUT }),
  );
  await Promise.all(clients.map((client) => client.getLock('warm').withLock(() => undefined)));
  return { connections, clients };
}

/**
 * Runs `before` once, as the first group lease cut to `lease` ms is written on `connection` (the
 * attempts ask for 2 x waitTime; only the cut names the lease asked).
 */
function onFirstCut(connection: Redis, lease: number, before: () => void): void {
  const send = connection.sendCommand.bind(connection);
  let seen = false;
  connection.sendCommand = ((command: { name: string; args: unknown[] }) => {
    if (!seen && command.name === 'evalsha' && command.args.some((arg) => String(arg) === String(lease))) {
      seen = true;
      before();
    }
    return send(command as never);
  }) as typeof connection.sendCommand;
}

type Badness = 'killed' | 'paused' | 'slow';

describe('group locks with a bad master', () => {
  let servers: RedisServer[] = [];
  let proxy: FaultProxy | undefined;
  let clients: LockClient[] = [];

  beforeEach(async () => {
    servers = await Promise.all([startRedis(), startRedis(), startRedis()]);
    proxy = await new FaultProxy((servers[2] as RedisServer).port).start();
    clients = servers.map(
      (server, i) =>
        new LockClient(server.connect(i === 2 ? { port: (proxy as FaultProxy).port } : {}), {
          commandTimeout: COMMAND_TIMEOUT,
          watchdogTimeout: 1_500,
        }),
    );
    // Connected and scripts loaded before the fault, as in a running service.
    await Promise.all(clients.map((client) => client.getLock('warm').withLock(() => undefined)));
  });
  afterEach(async () => {
    for (const server of servers) server.thaw();
    await Promise.all(clients.map((client) => client.close()));
    await proxy?.stop();
    await Promise.all(servers.map((server) => server.stop()));
  });

  const members = (name: string): RLock[] => clients.map((client) => client.getLock(name));

  /**
   * The master a RedLock on `name` can lose and keep its quorum. A member that answers after the
   * quorum was held joins the hold, but on a loaded machine one can answer only after its budget
   * (commandTimeout): it is called off and what it took is given back, so only two masters hold.
   * Losing one of those would leave no quorum, so the spare is the one not holding, or the third
   * when all three hold.
   */
  async function spareMaster(name: string): Promise<number> {
    await sleep(500);
    const holds = await Promise.all(
      servers.map(async (server) => (await server.connect().exists(name)) === 1),
    );
    expect(holds.filter(Boolean).length).toBeGreaterThanOrEqual(2);
    return holds.indexOf(false) >= 0 ? holds.indexOf(false) : 2;
  }

  async function spoil(badness: Badness): Promise<void> {
    const bad = servers[2] as RedisServer;
    if (badness === 'killed') await bad.down();
    else if (badness === 'paused') bad.freeze();
    else proxy?.delayReplies(3_000);
  }

  test.each<Badness>(['killed', 'paused', 'slow'])(
    'RedLock with one master %s: acquires, answers and releases on the majority at once',
    async (badness) => {
      await spoil(badness);
      const red = (clients[0] as LockClient).getRedLock(...members(`red-${badness}`));
      const started = performance.now();
      expect(await red.tryLock(2_000, 10_000)).toBe(true);
      const acquireMs = performance.now() - started;
      const lockedStarted = performance.now();
      expect(await red.isHeldByCurrentTask()).toBe(true);
      const queryMs = performance.now() - lockedStarted;
      const unlockStarted = performance.now();
      await red.unlock();
      const unlockMs = performance.now() - unlockStarted;
      const withLock = await timed(red.withLock(() => 'ran', { waitTime: 2_000 }));
      reportFault(`RedLock, one master ${badness}`, {
        acquireMs,
        queryMs,
        unlockMs,
        withLockMs: withLock.ms,
      });
      expect(withLock.value).toBe('ran');
      expect(acquireMs).toBeLessThan(500);
      expect(queryMs).toBeLessThan(500);
      expect(unlockMs).toBeLessThan(500);
      expect(withLock.ms).toBeLessThan(1_000);
      // The healthy members are free again.
      expect(await clients[0]!.getLock(`red-${badness}`).isLocked()).toBe(false);
      expect(await clients[1]!.getLock(`red-${badness}`).isLocked()).toBe(false);
      if (badness !== 'killed') {
        // What the bad member granted late is given back once it answers.
        servers[2]!.thaw();
        proxy?.delayReplies(0);
        const direct = servers[2]!.connect();
        await eventually(
          'nothing left on the bad master',
          async () => (await direct.exists(`red-${badness}`)) === 0,
          8_000,
        );
      }
    },
    20_000,
  );

  test.each<Badness>(['killed', 'paused'])(
    'MultiLock with one member %s: fails within its wait and leaves nothing on the others',
    async (badness) => {
      await spoil(badness);
      const multi = (clients[0] as LockClient).getMultiLock(...members(`multi-${badness}`));
      const outcome = await timed(multi.tryLock(2_000));
      const once = await timed(multi.tryLock());
      reportFault(`MultiLock, one member ${badness}`, { tryLockMs: outcome.ms, tryOnceMs: once.ms });
      expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
      expect(outcome.ms).toBeLessThan(waitBudget(2_000));
      expect(once.error).toBeInstanceOf(RedisUnavailableError);
      expect(once.ms).toBeLessThan(callBudget(COMMAND_TIMEOUT));
      await eventually('healthy members free', async () => {
        const locked = await Promise.all(
          [0, 1].map((i) => clients[i]!.getLock(`multi-${badness}`).isLocked()),
        );
        return !locked.includes(true);
      });
    },
    20_000,
  );

  test('RedLock with two of three masters down: queries and tryLock say Redis failed, not "not locked"', async () => {
    const red = (clients[0] as LockClient).getRedLock(...members('red-two-down'));
    expect(await red.tryLock(1_000, 10_000)).toBe(true);
    await Promise.all([servers[1]!.down(), servers[2]!.down()]);
    const outcomes = await Promise.all([
      timed(red.isLocked()),
      timed(red.isHeldByCurrentTask()),
      timed(red.remainTimeToLive()),
      timed(red.getHoldCount()),
      timed(red.forceUnlock()),
      timed((clients[0] as LockClient).getRedLock(...members('red-two-down-2')).tryLock(1_000)),
    ]);
    outcomes.forEach((outcome, i) => {
      expect(outcome.value).toBeUndefined();
      expect(outcome.error).toBeInstanceOf(RedisUnavailableError);
      // The queries within commandTimeout, the tryLock(1000) within its wait.
      expect(outcome.ms).toBeLessThan(i === 5 ? waitBudget(1_000) : callBudget(COMMAND_TIMEOUT));
    });
  }, 20_000);

  test('RedLock queries answer on the quorum without waiting for a master that is down', async () => {
    const red = (clients[0] as LockClient).getRedLock(...members('red-queries'));
    expect(await red.tryLock(1_000, 10_000)).toBe(true);
    // On a loaded machine a member can answer only after its budget: it is called off, and what
    // it took is given back. The master paused must then be that one, so that two holders are
    // left to answer (pausing a holder would leave no quorum of holders to answer with).
    const paused = await spareMaster('red-queries');
    servers[paused]!.freeze();
    const ttl = await timed(red.remainTimeToLive());
    const count = await timed(red.getHoldCount());
    const unlocked = await timed(red.unlock());
    expect(ttl.value).toBeGreaterThan(8_000);
    expect(count.value).toBe(1);
    expect(unlocked.error).toBeUndefined();
    for (const outcome of [ttl, count, unlocked]) expect(outcome.ms).toBeLessThan(500);
  }, 20_000);

  test('RedLock held by the watchdog keeps every live master when another dies, also one that answered late', async () => {
    const lost: LockLostEvent[] = [];
    for (const client of clients) client.on('lockLost', (event) => lost.push(event));
    // The third master answers 150 ms after the others, as a busier or farther one does: the
    // quorum is reached without it, and it must be held all the same.
    proxy?.delayReplies(150);
    const red = (clients[0] as LockClient).getRedLock(...members('red-every-live'));
    await red.lock();
    await eventually(
      'every master holds it',
      async () => (await servers[2]!.connect().exists('red-every-live')) === 1,
      1_000,
    );
    // One of the first two dies: the other and the late one are still a quorum.
    await servers[0]!.down();
    // Three watchdog leases of 1.5 s.
    await sleep(4_500);
    const [ttl1, ttl2] = await Promise.all([1, 2].map((i) => servers[i]!.connect().pttl('red-every-live')));
    reportFault('RedLock, one master killed after a late member joined', { ttl1: ttl1!, ttl2: ttl2! });
    expect(ttl1).toBeGreaterThan(0);
    expect(ttl2).toBeGreaterThan(0);
    expect(lost).toEqual([]);
    expect(await red.isHeldByCurrentTask()).toBe(true);
    await red.unlock();
    await eventually('the live members free', async () => {
      const held = await Promise.all([1, 2].map((i) => servers[i]!.connect().exists('red-every-live')));
      return held.every((exists) => exists === 0);
    });
  }, 20_000);

  // With a fixed lease and a wait, the members take a longer lease first and are cut to the one
  // asked once the quorum is held. A loop that stands still between sending the cut and reading its
  // answers, longer than that lease, would hand out a group whose every member is gone.
  test('RedLock: a cut of the leases answered after they ran out holds nothing; the wait takes it afresh', async () => {
    const { connections, clients: stalled } = await clientsOn(servers);
    const LEASE = 300;
    let stalls = 0;
    // The loop stands still once the first cut is written, before its answers are read.
    for (const connection of connections) {
      onFirstCut(connection, LEASE, () => {
        if (stalls++ === 0) setImmediate(() => blockFor(2 * LEASE));
      });
    }
    const red = (stalled[0] as LockClient).getRedLock(...stalled.map((client) => client.getLock('red-cut')));
    expect(await red.tryLock(3_000, LEASE)).toBe(true);
    expect(stalls).toBeGreaterThanOrEqual(1);
    // Held by a round after the stalled one: at least two masters hold it, within the lease asked.
    const ttls = await Promise.all(servers.map((server) => server.connect().pttl('red-cut')));
    expect(ttls.filter((ttl) => ttl > 0 && ttl <= LEASE).length).toBeGreaterThanOrEqual(2);
    await red.unlock();
    await Promise.all(stalled.map((client) => client.close()));
  }, 20_000);

  // The cut of the members' leases is part of the wait: a master that stops answering as it is
  // sent makes the round fail within the wait's slack, and its give-back is the one release the
  // budget allows after that (not a whole commandTimeout for each).
  test('MultiLock: a master paused as the leases are cut answers within waitTime + 200 ms + one release', async () => {
    const { connections, clients: cutting } = await clientsOn(servers);
    // A lease shorter than twice the wait: the members take 2 x WAIT first, then are cut to it.
    const WAIT = 300;
    const LEASE = 400;
    let frozen = false;
    // The third master stops as its cut is sent.
    onFirstCut(connections[2] as Redis, LEASE, () => {
      frozen = true;
      servers[2]?.freeze();
    });
    const multi = (cutting[0] as LockClient).getMultiLock(
      ...cutting.map((client) => client.getLock('multi-cut')),
    );
    const { ms, error } = await timed(multi.tryLock(WAIT, LEASE));
    reportFault('MultiLock, a master paused during the cut', { ms, error: String(error) });
    expect(frozen).toBe(true);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect(ms).toBeLessThanOrEqual(waitBudget(WAIT) + COMMAND_TIMEOUT);
    servers[2]?.thaw();
    // Nothing kept on the live masters.
    for (const server of servers.slice(0, 2)) expect(await server.connect().exists('multi-cut')).toBe(0);
    await Promise.all(cutting.map((client) => client.close()));
  }, 20_000);

  test('RedLock keeps its quorum alive with one master down, and reports the loss below quorum', async () => {
    const lost: LockLostEvent[] = [];
    for (const client of clients) client.on('lockLost', (event) => lost.push(event));
    const red = (clients[0] as LockClient).getRedLock(...members('red-watchdog'));
    let signal: AbortSignal | undefined;
    let release!: () => void;
    const holding = red.withLock(async (held) => {
      signal = held.signal;
      await new Promise<void>((resolve) => (release = resolve));
    });
    await eventually('held', () => signal !== undefined);
    const spare = await spareMaster('red-watchdog');
    await servers[spare]!.down();
    const [live, last] = [0, 1, 2].filter((i) => i !== spare) as [number, number];
    // Three watchdog leases of 1.5 s: renewed on the two live masters, nothing reported.
    await sleep(4_500);
    expect(signal?.aborted).toBe(false);
    expect(lost).toEqual([]);
    expect(await clients[last]!.getLock('red-watchdog').remainTimeToLive()).toBeGreaterThan(0);
    // A second master gone: below quorum once its lease could have run out.
    const downAt = performance.now();
    await servers[live]!.down();
    await eventually('loss reported', () => lost.length > 0, 5_000);
    const toldMs = performance.now() - downAt;
    reportFault('RedLock below quorum', { toldMs });
    expect(signal?.aborted).toBe(true);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ name: red.name });
    release();
    await holding.catch(() => undefined);
  }, 30_000);
});
