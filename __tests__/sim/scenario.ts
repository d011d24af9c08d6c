import type { WakeBounds, WatchedKind } from './checks/watchers';
import type { FaultKind } from './faults';
import type { RLock } from './library';
import type { Random } from './random';
import type { ConnectionOptions } from './world/connection';
import type { SimClient } from './world/world';
import type { LockTarget } from './workloads/locks';

/**
 * What one seed simulates: which kind of lock or synchronizer, how many clients and tasks, the
 * client's times, the ioredis options, and how many servers (several for MultiLock / RedLock).
 * Everything is drawn from the seed; the kind from the seed's remainder, so that every kind gets
 * its share of any run of consecutive seeds.
 */
export const KINDS = [
  'lock',
  'fair',
  'fenced',
  'spin',
  'rw',
  'rw-writer-preference',
  'multi',
  'red',
  'semaphore',
  'expirable-semaphore',
  'latch',
] as const;
export type Kind = (typeof KINDS)[number];

export interface Scenario {
  seed: number;
  kind: Kind;
  clients: number;
  tasksPerClient: number;
  servers: number;
  watchdogTimeout: number;
  commandTimeout: number;
  fairLockWaitTimeout: number;
  connection: Partial<ConnectionOptions>;
  /** Virtual ms of the fault phase. */
  faultPhase: number;
  faults: number;
  exclude: FaultKind[];
}

export function scenarioFor(seed: number, random: Random, only?: Kind): Scenario {
  const kind = only ?? (KINDS[seed % KINDS.length] as Kind);
  const group = kind === 'multi' || kind === 'red';
  const connection: Partial<ConnectionOptions> = {};
  const style = random.int(0, 9);
  if (style === 0) connection.maxRetriesPerRequest = null;
  if (style === 1) connection.maxRetriesPerRequest = 1;
  if (style === 2) connection.enableOfflineQueue = false;
  const exclude: FaultKind[] = [];
  // RedLock and MultiLock promise nothing across a restart that loses a member's data (docs).
  if (group) exclude.push('server restarted, data lost');
  return {
    seed,
    kind,
    clients: random.int(2, group ? 3 : 4),
    tasksPerClient: random.int(1, 3),
    servers: group ? 3 : 1,
    watchdogTimeout: random.int(1000, 4000),
    commandTimeout: random.int(300, 1500),
    fairLockWaitTimeout: random.int(1000, 3000),
    connection,
    faultPhase: random.int(3000, 12000),
    faults: random.int(0, 8),
    exclude,
  };
}

/** The kinds the checks watch in Redis, per scenario kind. */
export function watchedKind(kind: Kind): WatchedKind | undefined {
  switch (kind) {
    case 'lock':
    case 'multi':
    case 'red':
      return 'lock';
    case 'fair':
      return 'fair';
    case 'fenced':
      return 'fenced';
    case 'spin':
      return 'spin';
    case 'rw':
    case 'rw-writer-preference':
      return 'rw';
    default:
      return undefined;
  }
}

/**
 * The wake-up bounds (see docs/reliability.md, "Simulation"): with no fault about, a waiter takes
 * a lock that became free within 250 ms (a message's delivery and one attempt; the spin lock's
 * longest pause, 512 ms, plus that); after a fault within the lease (the holder's ttl is how long
 * a waiter whose message was lost may sleep), plus the fair lock's waiter and hand-off timeouts,
 * plus a reconnect's backoff.
 */
export function wakeBounds(scenario: Scenario): WakeBounds {
  const lease = Math.max(scenario.watchdogTimeout, 4000);
  const calm = scenario.kind === 'spin' ? 800 : 250;
  const disturbed = lease + scenario.fairLockWaitTimeout + 1000 + 2000 + calm;
  return { calm, disturbed, lookBack: lease + scenario.fairLockWaitTimeout };
}

/** Which lock a task takes for one operation. */
export function lockTargets(scenario: Scenario, sims: SimClient[], random: Random): () => LockTarget {
  const [sim] = sims as [SimClient];
  const { client } = sim;
  const name = scenario.kind;
  switch (scenario.kind) {
    case 'lock':
      return () => ({ resource: name, mode: 'exclusive', lock: client.getLock(name) });
    case 'fair':
      return () => ({ resource: name, mode: 'exclusive', lock: client.getFairLock(name) });
    case 'fenced':
      return () => ({ resource: name, mode: 'exclusive', lock: client.getFencedLock(name) });
    case 'spin':
      return () => ({ resource: name, mode: 'exclusive', lock: client.getSpinLock(name) });
    case 'rw':
    case 'rw-writer-preference': {
      const writerPreference = scenario.kind === 'rw-writer-preference';
      return () => {
        const rw = client.getReadWriteLock(name, { writerPreference });
        const write = random.chance(0.4);
        return {
          resource: name,
          mode: write ? 'write' : 'read',
          lock: write ? rw.writeLock() : rw.readLock(),
        };
      };
    }
    case 'multi':
    case 'red': {
      return () => {
        const members: RLock[] = sims.map((member) => member.client.getLock(name));
        const lock =
          scenario.kind === 'multi' ? client.getMultiLock(...members) : client.getRedLock(...members);
        return {
          resource: name,
          mode: 'exclusive',
          lock,
          extraWait: scenario.commandTimeout + 10,
          group: true,
        };
      };
    }
    default:
      throw new Error(`${scenario.kind} is not a lock`);
  }
}
