import { Ledger } from './checks/ledger';
import { Watchers } from './checks/watchers';
import { FaultPlan, type FaultKind } from './faults';
import { fencingTokenKey } from './library';
import type { Mutant } from './mutants';
import { sha1 } from './redis/lua';
import { scenarioFor, watchedKind, wakeBounds, type Kind, type Scenario } from './scenario';
import { CALM } from './world/network';
import type { SimProcess } from './world/process';
import { World, type SimClient } from './world/world';
import { followEvents, startTask, type TaskKit } from './workloads/kit';
import { workloadFor } from './workloads/registry';

/**
 * One seed, start to end: the scenario it draws, a fault phase (the workload under the fault
 * plan), then the faults stop and every task must finish within LIVENESS_MS (every waiter that
 * still wants the lock gets it), every client closes within its budget, and Redis is left with
 * nothing but keys that expire, and after they have, only the counters Redisson also keeps.
 */

/** After the faults stop, how long the tasks may take to finish (see docs/reliability.md). */
export const LIVENESS_MS = 30_000;

export interface SeedResult {
  seed: number;
  kind: Kind;
  failures: string[];
  /** Events the world ran. */
  steps: number;
  /** Virtual ms simulated. */
  virtualMs: number;
  faults: Partial<Record<FaultKind, number>>;
  outcomes: Record<string, number>;
  figures: Record<string, number>;
  trace: string[];
  scenario: Scenario;
  /** Digests of the scripts the servers ran (the agreement test covers each). */
  scripts: string[];
}

export interface RunOptions {
  trace?: boolean;
  kind?: Kind;
  mutant?: Mutant;
  /** Faults this run leaves out, besides the scenario's own (a seed found before a kind existed). */
  exclude?: FaultKind[];
}

export async function runSeed(seed: number, options: RunOptions = {}): Promise<SeedResult> {
  const world = new World(seed);
  world.traceEnabled = options.trace === true;
  world.network.tracing = options.trace === true;
  const random = world.random.fork(3);
  const scenario = scenarioFor(seed, random, options.kind);
  scenario.exclude.push(...(options.exclude ?? []));
  for (let i = 0; i < scenario.servers; i += 1)
    world.addServer(scenario.servers > 1 ? `redis${i + 1}` : 'redis');
  const scripts = new Set<string>();
  for (const server of world.servers) {
    server.observers.push({
      afterCommand: (_server, command) => {
        if (command.script) scripts.add(sha1(command.script.text));
      },
    });
  }
  const uninstall = options.mutant?.install(world);
  world.start();
  const outcomes = new Map<string, number>();
  let faults: FaultPlan | undefined;
  let ledger: Ledger | undefined;
  let watchers: Watchers | undefined;
  try {
    const book = new Ledger(
      () => world.now,
      (message) => world.fail(message),
    );
    ledger = book;
    watchers = new Watchers(world, book);
    const watched = watchedKind(scenario.kind);
    if (watched) {
      for (let i = 0; i < scenario.servers; i += 1)
        watchers.watch(scenario.kind, watched, wakeBounds(scenario), i);
    }
    const workload = workloadFor(scenario);
    let stopping = false;
    const tasks = new Map<SimProcess, Set<Promise<void>>>();
    const lost = new Map<string, number>();
    let spawned = 0;
    const spawn = (name: string): void => {
      spawned += 1;
      const sims: SimClient[] = [];
      let process: SimProcess | undefined;
      for (let i = 0; i < scenario.servers; i += 1) {
        const sim = world.addClient(
          name,
          {
            watchdogTimeout: scenario.watchdogTimeout,
            commandTimeout: scenario.commandTimeout,
            fairLockWaitTimeout: scenario.fairLockWaitTimeout,
          },
          scenario.connection,
          i,
          process,
        );
        process = sim.process;
        followEvents(sim, lost, world);
        sims.push(sim);
      }
      const running = new Set<Promise<void>>();
      tasks.set(process as SimProcess, running);
      for (let t = 0; t < scenario.tasksPerClient; t += 1) {
        const kit: TaskKit = {
          world,
          ledger: book,
          sim: sims[0] as SimClient,
          random: random.fork(spawned * 100 + t),
          commandTimeout: scenario.commandTimeout,
          stopping: () => stopping,
          outcomes,
          name: `${name}/t${t + 1}`,
        };
        const task = startTask(kit, () => workload.task(kit, sims, lost));
        running.add(task);
        void task.finally(() => running.delete(task));
      }
    };
    workload.prepare?.(world, book, scenario);
    for (let i = 0; i < scenario.clients; i += 1) spawn(`c${i + 1}`);
    faults = new FaultPlan(world, watchers, random.fork(7), {
      exclude: scenario.exclude,
      lease: Math.max(scenario.watchdogTimeout, 1000),
      respawn: (dead) => spawn(`${dead.process.name}'`),
    });
    faults.plan(scenario.faults, 200, scenario.faultPhase, seed);
    await world.run(scenario.faultPhase);
    if (world.failures.length > 0) return result();

    // The faults are over: everything heals (the plan ends each of its faults by now).
    world.network.faults = CALM;
    stopping = true;
    const healedAt = world.now;
    const live = (): SimProcess[] => [...tasks.keys()].filter((process) => process.state !== 'dead');
    const allDone = (): boolean => live().every((process) => (tasks.get(process) as Set<unknown>).size === 0);
    await world.run(healedAt + LIVENESS_MS, allDone);
    if (world.failures.length > 0) return result();
    if (!allDone() && world.failures.length === 0 && !workload.stuckIsExcused?.(world)) {
      const waiting = [...book.waits].map(
        (wait) => `${wait.process.name} on ${wait.resource} since ${wait.since} ms`,
      );
      world.fail(
        `tasks still running ${LIVENESS_MS} ms after the faults stopped; waiting: ${waiting.join(', ') || 'none'}`,
      );
    }
    // Every live client closes within its budget: its close timeout (5 s) and a release each.
    let closing = 0;
    for (const sim of world.clients) {
      if (sim.process.state === 'dead') continue;
      closing += 1;
      void sim.process
        .run(() =>
          book.timed(`close() of ${sim.process.name}`, sim.process, 5000 + 2 * scenario.commandTimeout, () =>
            sim.client.close(),
          ),
        )
        .catch((error: unknown) => world.fail(`close() failed: ${String(error)}`))
        .finally(() => (closing -= 1));
    }
    await world.run(world.now + 20_000, () => closing === 0);
    await world.run(world.now + 60_000, () => world.clock.idle);
    if (world.failures.length > 0) return result();
    workload.finish?.(world, scenario);
    checkLeftovers(world, scenario, 'without a ttl');
    // Past every lease and latch: only the counters Redisson keeps may remain.
    await world.run(world.now + 600_000);
    checkLeftovers(world, scenario, 'once every ttl ran out');
    return result();
  } finally {
    world.stop();
    uninstall?.();
  }

  function result(): SeedResult {
    return {
      seed,
      kind: scenario.kind,
      failures: [...world.failures],
      steps: world.clock.steps,
      virtualMs: world.now,
      faults: Object.fromEntries(faults?.counts ?? []),
      outcomes: Object.fromEntries(outcomes),
      figures: {
        ...watchers?.figures,
        calls: ledger?.settled ?? 0,
        worstBudgetUse: Math.round((ledger?.worstBudgetUse ?? 0) * 100) / 100,
      },
      trace: world.traceLines,
      scenario,
      scripts: [...scripts],
    };
  }
}

/** Keys Redisson keeps for good, and so may rlock: a semaphore's permits, a fencing counter, a latch's count. */
function counters(scenario: Scenario): Set<string> {
  const name = scenario.kind;
  switch (scenario.kind) {
    case 'semaphore':
    case 'latch':
      return new Set([name]);
    case 'expirable-semaphore':
      return new Set([name, `{${name}}:timeout`]);
    case 'fenced':
      return new Set([fencingTokenKey(name)]);
    default:
      return new Set();
  }
}

function checkLeftovers(
  world: World,
  scenario: Scenario,
  when: 'without a ttl' | 'once every ttl ran out',
): void {
  const allowed = counters(scenario);
  for (const server of world.servers) {
    for (const key of server.store.allKeys()) {
      if (allowed.has(key)) continue;
      const ttl = server.store.expiresAt(key);
      if (when === 'without a ttl' && ttl !== undefined) continue;
      world.fail(`${server.name} keeps ${key} ${when} (${describeKey(world, server.store.peek(key))})`);
    }
  }
}

function describeKey(_world: World, value: ReturnType<World['servers'][number]['store']['peek']>): string {
  if (!value) return 'gone';
  if (value.type === 'string') return `string ${value.value}`;
  if (value.type === 'list') return `list ${value.value.join(',')}`;
  return `${value.type} ${JSON.stringify([...value.value])}`;
}
