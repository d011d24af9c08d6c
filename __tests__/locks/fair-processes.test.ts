import type { RLock } from '../../src';
import { fifoViolations } from '../helpers/fifo';
import type { RedisServer } from '../helpers/redis-server';
import { reportFault } from '../helpers/report';
import { useRedis } from '../helpers/setup';
import { eventually, sleep } from '../helpers/wait';
import { startWorker, type Worker } from '../helpers/workers';

const queueKey = (name: string): string => `rlock_fair_queue:{${name}}`;
const FAIR = { LOCK_KIND: 'fair' };

/** fairLockHandoffTimeout's default: how long a hand-off waits for a waiter that does not confirm it. */
const HANDOFF_TIMEOUT = 1_000;
/** Room for a loaded machine (two cores, other test runs beside this one). */
const MARGIN = 1_000;
/** fairLockWaitTimeout's default: what a hand-off to a gone waiter used to stall the queue for. */
const WAIT_TIMEOUT = 10_000;

describe('fair lock across processes', () => {
  const redis = useRedis();
  /** Workers started by queueInOrder, stopped after each test however it ended. */
  const running: Worker[] = [];
  afterEach(() => {
    for (const worker of running.splice(0)) worker.child.kill('SIGKILL');
  });

  /**
   * Starts one worker per mode at once (each pays its start-up meanwhile), then lets them queue on
   * `name` one after another, in the order given: Redis queues them in that order.
   */
  async function queueInOrder(
    name: string,
    ...modes: Array<[mode: string, n: string, env?: Record<string, string>]>
  ): Promise<Worker[]> {
    const admin = redis.admin();
    const workers = modes.map(([mode, n, env]) =>
      startWorker([String(redis.port()), mode, name, n], { ...FAIR, ...env }),
    );
    running.push(...workers);
    for (const worker of workers) expect(await worker.firstMessage).toBe('started');
    for (const [i, worker] of workers.entries()) {
      worker.child.send('go');
      await eventually(
        `worker ${i} queued`,
        async () => (await admin.llen(queueKey(name))) === i + 1,
        10_000,
      );
    }
    return workers;
  }

  /**
   * Releases `holder`'s lock and waits for `next` to report that it holds it: how long that took,
   * reported under `what`.
   */
  async function releaseTo(holder: RLock, next: Worker, what: string): Promise<number> {
    const releasedAt = performance.now();
    await holder.unlock();
    const turn = await messageAfter(next, releasedAt);
    expect(turn.message).toBe('locked');
    reportFault(what, { nextHoldsAfterMs: turn.ms });
    return turn.ms;
  }

  /** Waits for `worker`'s next message and says how long after `since` (performance.now()) it came. */
  async function messageAfter(worker: Worker, since: number): Promise<{ message: string; ms: number }> {
    const message = await worker.nextMessage();
    return { message, ms: performance.now() - since };
  }

  /** The outages a give-up can meet: the server paused, restarted with its data, restarted without. */
  const outages: Array<[string, (server: RedisServer, gaveUp: Promise<unknown>) => Promise<void>]> = [
    [
      'Redis is paused (SIGSTOP)',
      async (server, gaveUp) => {
        server.freeze();
        await gaveUp;
        server.thaw();
      },
    ],
    [
      'Redis restarts with its data (persistence)',
      async (server, gaveUp) => {
        const node = server.connect();
        await node.save();
        node.disconnect();
        await server.down();
        await gaveUp;
        await server.up({ keepData: true });
      },
    ],
    [
      'Redis restarts without its data',
      async (server, gaveUp) => {
        await server.down();
        await gaveUp;
        await server.up();
      },
    ],
  ];

  test.each(outages)(
    'waiters at the head that give up while %s: the live waiters behind them get the lock without a stall',
    async (what, outage) => {
      const name = `quitters-${outages.findIndex(([which]) => which === what)}`;
      const admin = redis.admin();
      const holderClient = redis.client();
      const holder = holderClient.getFairLock(name);
      await holder.lock();
      const [quitterA, quitterB, first, second] = (await queueInOrder(
        name,
        ['giveup', '1500'],
        ['giveup', '1500'],
        ['turn', '1'],
        ['turn', '2'],
      )) as [Worker, Worker, Worker, Worker];
      // Both waits run out during the outage: their leaving cannot reach Redis then.
      const gaveUp = Promise.all([quitterA.nextMessage(), quitterB.nextMessage()]);
      await outage(await redis.serverOf(name), gaveUp);
      expect(await gaveUp).toEqual(['gave-up', 'gave-up']);
      await redis.healthy();
      // The holder's client is back (its connection reconnects after a restart).
      await eventually(
        'the holder reaches Redis again',
        () =>
          holder.isLocked().then(
            () => true,
            () => false,
          ),
        15_000,
      );
      const releasedAt = performance.now();
      // After a restart without data the holder has nothing left to release: the live waiters took
      // the lock already (when their clients came back they looked again).
      await holder.unlock().catch(() => undefined);
      // Not a hand-off to a waiter that left, waiting fairLockWaitTimeout (10 s) for it: at most the
      // hand-offs to the two quitters coming back, had their clients not given them back before.
      const turns = [];
      for (const live of [first, second]) {
        const turn = await messageAfter(live, releasedAt);
        expect(turn.message).toBe('locked');
        expect(turn.ms).toBeLessThan(2 * HANDOFF_TIMEOUT + MARGIN);
        turns.push(turn.ms);
      }
      reportFault(`give-ups while ${what}`, { firstLiveMs: turns[0] ?? NaN, secondLiveMs: turns[1] ?? NaN });
      expect([await first.nextMessage(), await second.nextMessage()]).toEqual(['done', 'done']);
      expect(await admin.get(`${name}:overlaps`)).toBeNull();
    },
    60_000,
  );

  test('8 processes acquire in the order they arrived', async () => {
    const admin = redis.admin();
    const port = String(redis.port());
    const holder = redis.client().getFairLock('arrivals');
    await holder.lock();
    const workers: Worker[] = [];
    for (let i = 0; i < 8; i += 1) {
      const worker = startWorker([port, 'wait', 'arrivals', String(i)], FAIR);
      workers.push(worker);
      expect(await worker.firstMessage).toBe('started');
      await eventually(
        `worker ${i} queued`,
        async () => (await admin.llen(queueKey('arrivals'))) === i + 1,
        10_000,
      );
    }
    await holder.unlock();
    expect(await Promise.all(workers.map((worker) => worker.nextMessage()))).toEqual(Array(8).fill('done'));
    expect(await admin.lrange('arrivals:order', 0, -1)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
  }, 60_000);

  test('6 processes under sustained contention: no overlap, grants in the order Redis queued them', async () => {
    const admin = redis.admin();
    const port = String(redis.port());
    const workers = Array.from({ length: 6 }, () => startWorker([port, 'loop', 'busy', '3000'], FAIR));
    const snapshots: string[][] = [];
    let running = true;
    const watching = (async () => {
      while (running) {
        const queue = await admin.lrange(queueKey('busy'), 0, -1);
        if (queue.length > 1) snapshots.push(queue);
        await sleep(1);
      }
    })();
    expect(await Promise.all(workers.map((worker) => worker.firstMessage))).toEqual(Array(6).fill('done'));
    running = false;
    await watching;
    const grants = await admin.lrange('busy:grants', 0, -1);
    // Enough grants to judge their order (not a speed figure: the machine may be busy).
    expect(grants.length).toBeGreaterThan(40);
    expect(new Set(grants).size).toBe(grants.length);
    expect(await admin.get('busy:overlaps')).toBeNull();
    expect(snapshots.length).toBeGreaterThan(10);
    expect(fifoViolations(snapshots, grants)).toEqual([]);
  }, 60_000);

  test('the head of the queue killed with SIGKILL: the next waiter gets the lock within fairLockHandoffTimeout', async () => {
    const admin = redis.admin();
    const client = redis.client();
    const holder = client.getFairLock('dead-head');
    await holder.lock();
    const [doomed, next] = (await queueInOrder('dead-head', ['turn', '0'], ['turn', '1'])) as [
      Worker,
      Worker,
    ];
    doomed.child.kill('SIGKILL');
    // Its place stays (fairLockWaitTimeout, 10 s): the release hands the lock to the dead head.
    const ms = await releaseTo(holder, next, 'head killed with SIGKILL');
    // The hand-off comes back once fairLockHandoffTimeout passes unconfirmed, not after 10 s.
    expect(ms).toBeLessThan(HANDOFF_TIMEOUT + MARGIN);
    expect(ms).toBeLessThan(WAIT_TIMEOUT);
    expect(await next.nextMessage()).toBe('done');
    expect(await admin.lrange('dead-head:order', 0, -1)).toEqual(['1']);
  }, 30_000);

  test('a waiter whose process is paused as the lock reaches it keeps its place: it is next once it runs again', async () => {
    const admin = redis.admin();
    const holder = redis.client().getFairLock('paused-head');
    await holder.lock();
    // The one behind the paused head holds the lock past the pause: whoever comes next shows whose
    // place was kept.
    const [paused, behind, last] = (await queueInOrder(
      'paused-head',
      ['turn', 'paused'],
      ['turn', 'behind', { HOLD_MS: String(3 * HANDOFF_TIMEOUT) }],
      ['turn', 'last'],
    )) as [Worker, Worker, Worker];
    paused.child.kill('SIGSTOP');
    const pausedAt = performance.now();
    // Paused, it cannot take the hand-off: it comes back within the bound and goes to the next one.
    expect(await releaseTo(holder, behind, 'head paused with SIGSTOP')).toBeLessThan(
      HANDOFF_TIMEOUT + MARGIN,
    );
    await sleep(Math.max(0, 2 * HANDOFF_TIMEOUT + 500 - (performance.now() - pausedAt)));
    paused.child.kill('SIGCONT');
    // Running again, it learns its hand-off was passed on without taking the lock meanwhile (no
    // overlap), and it is served before the waiter that queued after it.
    for (const worker of [behind, paused, last]) {
      if (worker !== behind) expect(await worker.nextMessage()).toBe('locked');
      expect(await worker.nextMessage()).toBe('done');
    }
    expect(await admin.lrange('paused-head:order', 0, -1)).toEqual(['behind', 'paused', 'last']);
    expect(await admin.get('paused-head:overlaps')).toBeNull();
  }, 30_000);

  test('a waiter whose hand-off message is lost (its subscriber dropped as the lock is released) takes its turn', async () => {
    const admin = redis.admin();
    const holder = redis.client().getFairLock('deaf-head');
    await holder.lock();
    const [head, behind] = (await queueInOrder('deaf-head', ['turn', 'head'], ['turn', 'behind'])) as [
      Worker,
      Worker,
    ];
    // Every subscriber connection drops: the message published while they reconnect is lost.
    await redis.killPubSub();
    expect(await releaseTo(holder, head, 'hand-off message lost')).toBeLessThan(HANDOFF_TIMEOUT + MARGIN);
    expect([await head.nextMessage(), await behind.nextMessage(), await behind.nextMessage()]).toEqual([
      'done',
      'locked',
      'done',
    ]);
    expect(await admin.lrange('deaf-head:order', 0, -1)).toEqual(['head', 'behind']);
    expect(await admin.get('deaf-head:overlaps')).toBeNull();
  }, 30_000);

  test('a holder process killed with SIGKILL: the head of the queue takes over within watchdogTimeout', async () => {
    const admin = redis.admin();
    const holder = startWorker([String(redis.port()), 'hold', 'dead-holder'], {
      ...FAIR,
      WATCHDOG_TIMEOUT: '1500',
    });
    expect(await holder.firstMessage).toBe('locked');
    const client = redis.client();
    let gotAt = 0;
    const waiting = client.runInTask(async () => {
      await client.getFairLock('dead-holder').lock();
      gotAt = performance.now();
    });
    await eventually('queued', async () => (await admin.llen(queueKey('dead-holder'))) === 1);
    holder.child.kill('SIGKILL');
    const killedAt = performance.now();
    await waiting;
    expect(gotAt - killedAt).toBeLessThan(1_500 + 500);
  }, 30_000);
});
