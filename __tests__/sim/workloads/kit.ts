import { AsyncLocalStorage } from 'node:async_hooks';
import type { Ledger } from '../checks/ledger';
import type { Random } from '../random';
import type { SimClient, World } from '../world/world';

/**
 * What every workload task is handed, and the rules all of them share: which errors a fault may
 * cause (anything else fails the run), how a task learns its owner id (from the client's events,
 * in the task's own async context), and sleeping on the virtual clock.
 */
export interface TaskKit {
  world: World;
  ledger: Ledger;
  sim: SimClient;
  random: Random;
  /** The client's call budget (commandTimeout). */
  commandTimeout: number;
  /** The faults are over: tasks finish what they do and stop. */
  stopping(): boolean;
  /** Counts by outcome, for the figures. */
  outcomes: Map<string, number>;
  /** `<process>/<task>`, for the trace. */
  name: string;
}

/** Errors a fault may legitimately cause; any other rejection is a failure. */
const EXPECTED = new Set([
  'ERR_REDIS_UNAVAILABLE',
  'ERR_LOCK_NOT_HELD',
  'ERR_LOCK_TIMEOUT',
  'ERR_LOCK_LOST',
  'ERR_CLIENT_CLOSED',
  'ERR_PERMIT_NOT_HELD',
]);

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function count(kit: TaskKit, outcome: string): void {
  kit.outcomes.set(outcome, (kit.outcomes.get(outcome) ?? 0) + 1);
}

/** Records an error: expected ones count, others fail the run. */
export function settleError(kit: TaskKit, what: string, error: unknown): void {
  const code = (error as { code?: string } | null)?.code;
  if (code !== undefined && EXPECTED.has(code)) {
    count(kit, code);
    return;
  }
  // A request made just before its process stood still past the request's window goes out after
  // the window closed and is refused LATE, having changed nothing: a deviation from
  // docs/protocol.md, which expects LATE only from a clock reading that is off (see
  // docs/reliability.md, "Simulation"). Counted, not failed, when the process did stand still.
  if ((error as { replyCode?: string } | null)?.replyCode === 'LATE' && stoodStillLately(kit)) {
    count(kit, 'LATE after a stall');
    return;
  }
  if (error instanceof Error && error.name === 'AbortError') {
    count(kit, 'aborted');
    return;
  }
  if (error === ABORTED) {
    count(kit, 'aborted');
    return;
  }
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  kit.world.fail(`${kit.sim.process.name}: ${what} failed unexpectedly: ${text}`);
}

/** Whether the task's process was stopped within the last 10 s (longer than any request window here). */
function stoodStillLately(kit: TaskKit): boolean {
  const now = kit.world.now;
  return kit.sim.process.pausedWithin(now - 10_000, now) > 0;
}

/** The reason the workloads abort their own waits with. */
export const ABORTED = Object.freeze({ reason: 'the workload aborted this wait' });

/** The owner id the library named in its last event for the task running now. */
interface TaskState {
  ownerId?: string;
  lost: Set<string>;
  /** The release of the task's last hold is under way (see lastRelease). */
  lastRelease?: { ownerId: string; acquiredAt: number };
}
const tasks = new AsyncLocalStorage<TaskState>();

export function inTask<T>(fn: () => Promise<T>): Promise<T> {
  return tasks.run({ lost: new Set() }, fn);
}

export function currentOwner(): string | undefined {
  return tasks.getStore()?.ownerId;
}

/** Hooks the client's events so that each task knows its owner id, and which of its leases were lost. */
export function followEvents(sim: SimClient, lost: Map<string, number>, world: World): void {
  sim.client.on('acquired', (event) => {
    const task = tasks.getStore();
    if (task) task.ownerId = event.ownerId;
  });
  sim.client.on('released', (event) => {
    // The task's own last release (see lastRelease): Redis must not keep a hold of the owner,
    // whatever the release answered: the hash is read, not only the answer.
    const task = tasks.getStore();
    if (!task?.lastRelease || task.lastRelease.ownerId !== event.ownerId) return;
    // The release of a hold taken after the last one (a re-entry inside it, its release sent again
    // in the background and answered only now) is not the last release: the last is still to come.
    if (event.heldMs !== undefined && world.now - event.heldMs > task.lastRelease.acquiredAt + 1e-6) return;
    if ((lost.get(`${event.name} ${event.ownerId}`) ?? -Infinity) >= task.lastRelease.acquiredAt) return;
    if (!event.freed) {
      world.fail(
        `${event.name}: ${event.ownerId} released its last hold but Redis still holds one: a hold counted twice`,
      );
      return;
    }
    const held = world.servers[sim.server]?.store.peek(event.name);
    if (held?.type === 'hash' && held.value.has(event.ownerId)) {
      world.fail(
        `${event.name}: ${event.ownerId} released its last hold, told the lock was free, but Redis still holds one`,
      );
    }
  });
  sim.client.on('redisError', (event) => {
    const retry = event.retryInMs === undefined ? 'given up' : `again in ${event.retryInMs} ms`;
    world.trace(
      `${sim.process.name}: redisError ${event.operation} ${event.name} (${retry}): ${event.error.message}`,
    );
  });
  sim.client.on('lockLost', (event) => {
    lost.set(`${event.name} ${event.ownerId}`, world.now);
    world.trace(`${sim.process.name}: lockLost ${event.name} ${event.ownerId} ${event.code}`);
  });
}

/** From now on the task's release is of its last hold (a withLock body about to end); see lastRelease. */
export function releasingLast(acquiredAt: number): void {
  const task = tasks.getStore();
  if (task?.ownerId !== undefined) task.lastRelease = { ownerId: task.ownerId, acquiredAt };
}

/** The last release is over. */
export function releasedLast(): void {
  const task = tasks.getStore();
  if (task) task.lastRelease = undefined;
}

/**
 * Runs `release`, the release of the task's last hold of an exclusive lock (taken at `acquiredAt`):
 * the client's 'released' event for it must say the lock is free now, unless the lease was lost.
 */
export async function lastRelease<T>(acquiredAt: number, release: () => Promise<T>): Promise<T> {
  const task = tasks.getStore();
  const ownerId = task?.ownerId;
  if (!task || ownerId === undefined) return release();
  task.lastRelease = { ownerId, acquiredAt };
  try {
    return await release();
  } finally {
    task.lastRelease = undefined;
  }
}

/** Runs a task's loop as the client's process, counting its end. */
export function startTask(kit: TaskKit, body: () => Promise<void>): Promise<void> {
  return kit.sim.process.run(() => inTask(body).catch((error: unknown) => settleError(kit, 'a task', error)));
}
