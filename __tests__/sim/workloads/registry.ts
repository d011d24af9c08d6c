import type { Ledger } from '../checks/ledger';
import { lockTargets, type Scenario } from '../scenario';
import type { SimClient, World } from '../world/world';
import type { TaskKit } from './kit';
import { prepareLatch, latchLoop, type LatchBook } from './latch';
import { lockLoop } from './locks';
import {
  checkPermitsBack,
  expirableLoop,
  newPermitBook,
  permitsLostWithTheDead,
  prepareSemaphores,
  semaphoreLoop,
  type PermitBook,
} from './semaphores';

/** The workload of a scenario's kind: its per-world checks (prepare), its task, its end check. */
export interface Workload {
  prepare?(world: World, ledger: Ledger, scenario: Scenario): void;
  task(kit: TaskKit, sims: SimClient[], lost: Map<string, number>): Promise<void>;
  finish?(world: World, scenario: Scenario): void;
  /**
   * Whether waits still out after the faults stopped are excused: a semaphore's permits taken by a
   * process that died are never given back (Redisson's semantics), so a wait for them lasts for ever.
   */
  stuckIsExcused?(world: World): boolean;
}

export function workloadFor(scenario: Scenario): Workload {
  switch (scenario.kind) {
    case 'semaphore':
    case 'expirable-semaphore': {
      let book: PermitBook | undefined;
      const expirable = scenario.kind === 'expirable-semaphore';
      return {
        prepare: (world, ledger) => {
          book = newPermitBook(ledger, 1 + (scenario.seed % 3));
          prepareSemaphores(world, scenario, book);
        },
        task: (kit) =>
          expirable ? expirableLoop(kit, book as PermitBook) : semaphoreLoop(kit, book as PermitBook),
        finish: (world) => checkPermitsBack(world, scenario, book as PermitBook),
        // Permits lost with the data, or with a process that died holding them, never come back.
        stuckIsExcused: (world) =>
          world.dataLost || (!expirable && permitsLostWithTheDead(book as PermitBook)),
      };
    }
    case 'latch': {
      const book: LatchBook = {
        countDowns: 0,
        answered: 0,
        roundCount: 0,
        answeredBefore: 0,
        openAt: 0,
        opened: 0,
      };
      return {
        prepare: (world) => prepareLatch(world, scenario, book),
        task: (kit) => latchLoop(kit, book),
      };
    }
    default:
      return {
        task: (kit, sims, lost) => lockLoop(kit, lockTargets(scenario, sims, kit.random), lost),
      };
  }
}
