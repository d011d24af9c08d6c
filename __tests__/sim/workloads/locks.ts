import type { RLock } from '../library';
import {
  ABORTED,
  count,
  currentOwner,
  lastRelease,
  releasedLast,
  releasingLast,
  settleError,
  sleep,
  type TaskKit,
} from './kit';

/**
 * The workload of every RLock kind (plain, fair, fenced, spin, either half of a read-write lock,
 * MultiLock, RedLock): a task's loop of the ways an app takes a lock — withLock with and without a
 * wait, tryLock with a wait and a lease, one attempt, lock() that waits for ever, re-entry,
 * a wait aborted half-way — each body held for a while and recorded in the ledger, each call
 * timed against its budget.
 */
export interface LockTarget {
  /** The resource the checks know it by: the lock's name, or the group's. */
  resource: string;
  mode: 'exclusive' | 'read' | 'write';
  lock: RLock;
  /**
   * What a wait may take beyond its documented budget. A MultiLock or RedLock gives back the
   * members of its last round before tryLock answers false: one release more (commandTimeout), a
   * deviation from docs/reliability.md that the simulation found (see "Simulation" there).
   */
  extraWait?: number;
  /** A MultiLock or RedLock: its members' owner ids differ per master, so the checks know none. */
  group?: boolean;
}

/** The slack docs/reliability.md gives a wait beyond its waitTime. */
export const WAIT_SLACK_MS = 200;

/** A wait's budget: waitTime + 200 ms; no wait at all (0) is one attempt, a single call's budget. */
export function waitBudget(kit: TaskKit, waitTime: number, target?: LockTarget): number {
  return (waitTime === 0 ? kit.commandTimeout + 10 : waitTime + WAIT_SLACK_MS) + (target?.extraWait ?? 0);
}

const OPS = ['withLock', 'withLockWait', 'tryWait', 'tryOnce', 'lockForever', 'reenter', 'abort'] as const;

export async function lockLoop(
  kit: TaskKit,
  targets: () => LockTarget,
  lost: Map<string, number>,
  ops = OPS,
): Promise<void> {
  while (!kit.stopping()) {
    const target = targets();
    const op = kit.random.pick(ops);
    kit.world.trace(`${kit.name}: ${op} ${target.mode} ${target.resource}`);
    try {
      await runOp(kit, target, op, lost);
      kit.world.trace(`${kit.name}: ${op} ${target.mode} done (owner ${currentOwner() ?? '?'})`);
    } catch (error) {
      kit.world.trace(
        `${kit.name}: ${op} ${target.mode} failed: ${error === ABORTED ? ABORTED.reason : String(error)}`,
      );
      settleError(kit, `${op} on ${target.resource}`, error);
    }
    await sleep(kit.random.int(0, 40));
  }
}

function holdTime(kit: TaskKit): number {
  return kit.random.chance(0.1) ? kit.random.int(100, 600) : kit.random.int(1, 60);
}

/** A body under the lock: believed held from start to end, unless the owner was told it is lost. */
async function body(
  kit: TaskKit,
  target: LockTarget,
  signal: AbortSignal | undefined,
  lost: Map<string, number>,
): Promise<void> {
  const ownerId = target.group ? undefined : currentOwner();
  const since = kit.world.now;
  const key = `${target.resource} ${ownerId}`;
  const leave = kit.ledger.believe({
    resource: target.resource,
    mode: target.mode,
    permits: 1,
    ownerId,
    process: kit.sim.process,
    told: () => signal?.aborted === true || (lost.get(key) ?? -Infinity) >= since,
  });
  try {
    await sleep(holdTime(kit));
  } finally {
    leave();
  }
}

/**
 * withLock, timed as docs/reliability.md bounds it: from the call to the body, its wait (waitTime +
 * 200 ms); from the body's end to the call's end, one call (commandTimeout: a release that takes
 * longer goes on in the background).
 */
async function timedWithLock(
  kit: TaskKit,
  target: LockTarget,
  label: string,
  options: { waitTime: number; leaseTime?: number },
  waited: () => void,
  run: (signal: AbortSignal) => Promise<void>,
  outermost = true,
): Promise<void> {
  const { ledger } = kit;
  const process = kit.sim.process;
  let started: () => void = () => undefined;
  let ended: () => void = () => undefined;
  const bodyStarted = new Promise<void>((resolve) => (started = resolve));
  const bodyEnded = new Promise<void>((resolve) => (ended = resolve));
  const { waitTime, leaseTime } = options;
  const call = target.lock.withLock(
    async (held) => {
      waited();
      started();
      const acquiredAt = kit.world.now;
      try {
        await run(held.signal);
        count(kit, 'held');
        if (outermost) releasingLast(acquiredAt);
      } finally {
        ended();
      }
    },
    { waitTime, ...(leaseTime === undefined ? {} : { leaseTime }) },
  );
  const settled = call.then(
    () => undefined,
    () => undefined,
  );
  await ledger.timed(`${label} to its body`, process, waitBudget(kit, waitTime, target), () =>
    Promise.race([bodyStarted, settled]),
  );
  waited();
  await Promise.race([bodyEnded, settled]);
  await ledger
    .timed(`${label} after its body`, process, kit.commandTimeout + 10, () => call)
    .finally(() => {
      if (outermost) releasedLast();
    });
}

async function runOp(
  kit: TaskKit,
  target: LockTarget,
  op: (typeof OPS)[number],
  lost: Map<string, number>,
): Promise<void> {
  const { ledger, sim } = kit;
  const { lock } = target;
  const process = sim.process;
  const name = target.resource;
  const stop = (): (() => void) => ledger.wait({ resource: name, process, permits: 1, mode: target.mode });
  switch (op) {
    case 'withLock':
    case 'withLockWait': {
      const waitTime = op === 'withLock' ? kit.random.int(0, 20) : kit.random.int(100, 3000);
      const leaseTime = kit.random.chance(0.3) ? kit.random.int(800, 3000) : undefined;
      const done = stop();
      await timedWithLock(
        kit,
        target,
        `withLock(${name}, wait ${waitTime})`,
        { waitTime, leaseTime },
        done,
        (signal) => body(kit, target, signal, lost),
      );
      return;
    }
    case 'tryWait': {
      const waitTime = kit.random.int(50, 2500);
      const leaseTime = kit.random.int(1000, 4000);
      const done = stop();
      const got = await ledger
        .timed(
          `tryLock(${name}, ${waitTime}, ${leaseTime})`,
          process,
          waitBudget(kit, waitTime, target),
          () => lock.tryLock(waitTime, leaseTime),
        )
        .finally(done);
      if (!got) return count(kit, 'not acquired');
      count(kit, 'held');
      const acquiredAt = kit.world.now;
      await body(kit, target, undefined, lost);
      await ledger.timed(`unlock(${name})`, process, kit.commandTimeout + 10, () =>
        lastRelease(acquiredAt, () => lock.unlock()),
      );
      return;
    }
    case 'tryOnce': {
      const got = await ledger.timed(`tryLock(${name})`, process, waitBudget(kit, 0, target), () =>
        lock.tryLock(),
      );
      if (!got) return count(kit, 'not acquired');
      count(kit, 'held');
      const acquiredAt = kit.world.now;
      await body(kit, target, undefined, lost);
      await ledger.timed(`unlock(${name})`, process, kit.commandTimeout + 10, () =>
        lastRelease(acquiredAt, () => lock.unlock()),
      );
      return;
    }
    case 'lockForever': {
      const done = stop();
      await ledger.timed(`lock(${name})`, process, Infinity, () => lock.lock()).finally(done);
      count(kit, 'held');
      const acquiredAt = kit.world.now;
      await body(kit, target, undefined, lost);
      await ledger.timed(`unlock(${name})`, process, kit.commandTimeout + 10, () =>
        lastRelease(acquiredAt, () => lock.unlock()),
      );
      return;
    }
    case 'reenter': {
      const waitTime = kit.random.int(100, 2000);
      const done = stop();
      await timedWithLock(
        kit,
        target,
        `withLock(${name}, wait ${waitTime})`,
        { waitTime },
        done,
        async (signal) => {
          await body(kit, target, signal, lost);
          // Nested on the same owner: re-enters at once, counts a second hold.
          await timedWithLock(
            kit,
            target,
            `nested withLock(${name})`,
            { waitTime: 0 },
            () => undefined,
            (inner) => body(kit, target, inner, lost),
            false,
          );
          count(kit, 're-entered');
        },
      );
      return;
    }
    case 'abort': {
      const waitTime = kit.random.int(200, 3000);
      const controller = new AbortController();
      const abortAt = kit.random.int(1, waitTime);
      const timer = setTimeout(() => controller.abort(ABORTED), abortAt);
      const done = stop();
      try {
        const got = await ledger.timed(
          `tryLock(${name}, ${waitTime}) aborted at ${abortAt}`,
          process,
          waitBudget(kit, waitTime, target),
          () => lock.tryLock({ waitTime, signal: controller.signal }),
        );
        clearTimeout(timer);
        done();
        if (!got) return count(kit, 'not acquired');
        count(kit, 'held');
        const acquiredAt = kit.world.now;
        await body(kit, target, undefined, lost);
        await ledger.timed(`unlock(${name})`, process, kit.commandTimeout + 10, () =>
          lastRelease(acquiredAt, () => lock.unlock()),
        );
      } finally {
        clearTimeout(timer);
        done();
      }
      return;
    }
  }
}
