import type { Ledger } from '../checks/ledger';
import type { Scenario } from '../scenario';
import type { World } from '../world/world';
import { ABORTED, count, settleError, sleep, type TaskKit } from './kit';
import { WAIT_SLACK_MS } from './locks';

/**
 * The semaphores' workload and checks. Tasks take and give back permits (acquire, tryAcquire with
 * and without a wait, withPermits, aborted waits; the expirable kind with leases and by permit id).
 * Checked after every step: the permits believed held never exceed the count, and Redis never
 * shows more available than the count leaves (a release or an acquire counted twice would); at the
 * end, every permit not lost with a dead holder is back.
 */
export interface PermitBook {
  total: number;
  /** Permits held by bodies of processes that died holding them: Redisson's semaphore never gets them back. */
  held: Map<symbol, { permits: number; process: { state: string }; expires: number }>;
  /** Acquires of dead processes still out: they may or may not have taken their permits. */
  inFlight: Map<symbol, { permits: number; process: { state: string } }>;
  /**
   * Releases the client gave up on (reported without a retry): one that reached Redis after its
   * request's window took no effect, and its permits are lost for good (docs/observability.md).
   */
  releasesGivenUp: number;
  followed: WeakSet<object>;
}

export function prepareSemaphores(world: World, scenario: Scenario, book: PermitBook): void {
  const name = scenario.kind;
  const expirable = scenario.kind === 'expirable-semaphore';
  world.afterStep.push(() => {
    // A restart that lost the data lost the count too: what the permits were is not known any more
    // (a task that sets them again sets them beside the holders from before), as in Redisson.
    if (world.dataLost) return;
    const now = world.now;
    let believed = 0;
    for (const entry of book.held.values()) if (entry.expires > now) believed += entry.permits;
    if (believed > book.total) world.fail(`${name}: ${believed} permits held at once, of ${book.total}`);
    const store = world.servers[0]?.store;
    const value = store?.peek(name);
    if (!store || value?.type !== 'string') return;
    const available = Number(value.value);
    if (available < 0) world.fail(`${name}: ${available} permits available`);
    if (expirable) {
      const timeouts = store.peek(`{${name}}:timeout`);
      const out = timeouts?.type === 'zset' ? timeouts.value.size : 0;
      if (available + out > book.total) {
        world.fail(
          `${name}: ${available} available and ${out} out, of ${book.total}: a permit counted twice`,
        );
      }
    } else {
      let heldNow = 0;
      for (const entry of book.held.values()) heldNow += entry.permits;
      if (available + heldNow > book.total) {
        world.fail(
          `${name}: ${available} available while ${heldNow} are held, of ${book.total}: a permit counted twice`,
        );
      }
    }
  });
}

/** At the end: every permit is back, but those a dead process held (or may have taken). */
export function checkPermitsBack(world: World, scenario: Scenario, book: PermitBook): void {
  if (scenario.kind === 'expirable-semaphore' || world.dataLost || book.releasesGivenUp > 0) return;
  let lost = 0;
  let maybe = 0;
  for (const entry of book.held.values()) lost += entry.permits;
  for (const entry of book.inFlight.values()) if (entry.process.state === 'dead') maybe += entry.permits;
  const value = world.servers[0]?.store.peek(scenario.kind);
  const available = value?.type === 'string' ? Number(value.value) : 0;
  const expected = book.total - lost;
  if (available > expected || available < expected - maybe) {
    world.fail(
      `${scenario.kind}: ${available} permits back at the end, expected ${expected}${maybe ? ` (or ${maybe} fewer)` : ''}`,
    );
  }
}

/** Whether a process died holding permits, or while an acquire of it was out. */
export function permitsLostWithTheDead(book: PermitBook): boolean {
  const dead = (entry: { process: { state: string } }): boolean => entry.process.state === 'dead';
  return (
    book.releasesGivenUp > 0 || [...book.held.values()].some(dead) || [...book.inFlight.values()].some(dead)
  );
}

/** Counts the releases the client gave up on (see PermitBook.releasesGivenUp). */
function followReleases(kit: TaskKit, book: PermitBook): void {
  const { client } = kit.sim;
  if (book.followed.has(client)) return;
  book.followed.add(client);
  client.on('redisError', (event) => {
    if (event.retryInMs === undefined && event.operation === 'release') book.releasesGivenUp += 1;
  });
}

export async function semaphoreLoop(kit: TaskKit, book: PermitBook): Promise<void> {
  const { client, process } = kit.sim;
  const name = 'semaphore';
  const semaphore = client.getSemaphore(name);
  followReleases(kit, book);
  await setPermits(kit, () => semaphore.trySetPermits(book.total));
  while (!kit.stopping()) {
    const permits = kit.random.int(1, Math.min(2, book.total));
    const op = kit.random.pick(['acquire', 'tryWait', 'tryOnce', 'withPermits', 'abort'] as const);
    const key = Symbol(op);
    const waitTime = kit.random.int(50, 2500);
    const controller = new AbortController();
    let bodyRan = false;
    const hold = async (): Promise<void> => {
      bodyRan = true;
      book.held.set(key, { permits, process, expires: Infinity });
      count(kit, 'held');
      await sleep(kit.random.int(1, 80));
      if (process.state !== 'dead') book.held.delete(key);
    };
    try {
      book.inFlight.set(key, { permits, process });
      const done = kit.ledger.wait({ resource: name, process, permits, mode: 'permits' });
      let got: boolean;
      try {
        if (op === 'acquire') {
          await kit.ledger.timed(`acquire(${permits})`, process, Infinity, () => semaphore.acquire(permits));
          got = true;
        } else if (op === 'tryOnce') {
          got = await kit.ledger.timed(`tryAcquire(${permits})`, process, kit.commandTimeout + 10, () =>
            semaphore.tryAcquire(permits),
          );
        } else if (op === 'withPermits') {
          await kit.ledger.timed(
            `withPermits(${permits}, ${waitTime})`,
            process,
            waitTime + WAIT_SLACK_MS + 100 + kit.commandTimeout,
            () => semaphore.withPermits(permits, hold, { waitTime }),
          );
          got = false;
        } else {
          const timer =
            op === 'abort'
              ? setTimeout(() => controller.abort(ABORTED), kit.random.int(1, waitTime))
              : undefined;
          got = await kit.ledger
            .timed(`tryAcquire(${permits}, ${waitTime})`, process, waitTime + WAIT_SLACK_MS, () =>
              semaphore.tryAcquire({ permits, waitTime, signal: controller.signal }),
            )
            .finally(() => clearTimeout(timer));
        }
      } finally {
        done();
        book.inFlight.delete(key);
      }
      if (got) {
        await hold();
        await kit.ledger.timed(`release(${permits})`, process, kit.commandTimeout + 10, () =>
          semaphore.release(permits).catch((error: unknown) => {
            // Refused LATE (its process stood still past the request's window): it took no effect,
            // and the permits stay out unless the caller releases again (this workload does not).
            if ((error as { replyCode?: string }).replyCode === 'LATE') book.releasesGivenUp += 1;
            throw error;
          }),
        );
      }
    } catch (error) {
      // withPermits' own release refused LATE (see the release above): its permits stay out.
      if (op === 'withPermits' && bodyRan && (error as { replyCode?: string }).replyCode === 'LATE') {
        book.releasesGivenUp += 1;
      }
      settleError(kit, `${op}(${permits}) on ${name}`, error);
    }
    await sleep(kit.random.int(0, 40));
  }
}

export async function expirableLoop(kit: TaskKit, book: PermitBook): Promise<void> {
  const { client, process } = kit.sim;
  const semaphore = client.getPermitExpirableSemaphore('expirable-semaphore');
  await setPermits(kit, () => semaphore.trySetPermits(book.total));
  while (!kit.stopping()) {
    const waitTime = kit.random.int(0, 2500);
    const leaseTime = kit.random.int(1500, 4000);
    const key = Symbol('permit');
    const controller = new AbortController();
    const abort = kit.random.chance(0.2);
    const timer = abort
      ? setTimeout(() => controller.abort(ABORTED), kit.random.int(1, waitTime + 1))
      : undefined;
    try {
      const done = kit.ledger.wait({ resource: 'expirable-semaphore', process, permits: 1, mode: 'permits' });
      const id = await kit.ledger
        .timed(
          `tryAcquire(wait ${waitTime}, lease ${leaseTime})`,
          process,
          waitTime + WAIT_SLACK_MS + (waitTime === 0 ? kit.commandTimeout : 0),
          () => semaphore.tryAcquire({ waitTime, leaseTime, signal: controller.signal }),
        )
        .finally(() => {
          clearTimeout(timer);
          done();
        });
      if (id === null) {
        count(kit, 'not acquired');
        continue;
      }
      const since = kit.world.now;
      // Counted while its lease surely lasts, and only while its process was never stopped.
      book.held.set(key, { permits: 1, process, expires: since + leaseTime - 50 });
      count(kit, 'held');
      await sleep(kit.random.int(1, 80));
      book.held.delete(key);
      if (process.pausedWithin(since, kit.world.now) === 0) {
        await kit.ledger.timed('release(id)', process, kit.commandTimeout + 10, () => semaphore.release(id));
      }
    } catch (error) {
      settleError(kit, 'a permit', error);
    }
    await sleep(kit.random.int(0, 40));
  }
}

async function setPermits(kit: TaskKit, set: () => Promise<boolean>): Promise<void> {
  for (;;) {
    try {
      await set();
      return;
    } catch (error) {
      settleError(kit, 'trySetPermits', error);
      await sleep(100);
    }
  }
}

export function newPermitBook(ledger: Ledger, total: number): PermitBook {
  void ledger;
  return { total, held: new Map(), inFlight: new Map(), releasesGivenUp: 0, followed: new WeakSet() };
}
