import type { Scenario } from '../scenario';
import type { World } from '../world/world';
import { count, settleError, sleep, type TaskKit } from './kit';
import { WAIT_SLACK_MS } from './locks';

/**
 * The count-down latch's workload and checks. Tasks set a count (the first trySetCount of a round
 * wins), count down, and await with a wait. Checked: a latch opens (its key deleted by a script)
 * only after as many countDown calls as its count could have reached it, each round on its own
 * (a re-sent countDown counted twice would open it early); await() answers true only if the latch was open at some
 * moment of its wait. How soon a waiter learns of an opening is not checked here: only that every
 * await settles within its budget (kit.ledger) and that every task finishes once the faults stop.
 */
export interface LatchBook {
  /** countDown calls made. */
  countDowns: number;
  /** Those that answered: a call that failed may still run later (a copy ioredis sends again). */
  answered: number;
  /** The count of the round the latch is in (0 when open, or when its data was lost). */
  roundCount: number;
  /** The countDown calls answered before the round began: none of them can count it down. */
  answeredBefore: number;
  /** The last moment the latch key was absent (open). */
  openAt: number;
  opened: number;
}

export function prepareLatch(world: World, scenario: Scenario, book: LatchBook): void {
  const name = scenario.kind;
  const server = world.servers[0];
  if (!server) return;
  let existedBefore = false;
  server.observers.push({
    beforeCommand: () => {
      existedBefore = server.store.has(name);
    },
    afterCommand: () => {
      const value = server.store.peek(name);
      // Open between two commands, even inside one step (a paused server runs its backlog at once).
      if (!value) book.openAt = world.now;
      // A round begins when a script creates the key: its count is what must be counted down.
      if (!existedBefore && value?.type === 'string') {
        book.roundCount = Number(value.value);
        book.answeredBefore = book.answered;
      }
    },
    keyRemoved: (_server, key, why) => {
      if (key !== name) return;
      const count = book.roundCount;
      book.roundCount = 0;
      // Lost with the data: that round will never be counted down.
      if (why !== 'deleted' || count === 0) return;
      book.opened += 1;
      const couldCount = book.countDowns - book.answeredBefore;
      if (couldCount < count) {
        world.fail(
          `${name}: opened after ${couldCount} countDown calls could count it down, though set to ${count}`,
        );
      }
    },
  });
  world.afterStep.push(() => {
    if (!server.store.has(name)) book.openAt = world.now;
  });
}

export async function latchLoop(kit: TaskKit, book: LatchBook): Promise<void> {
  const { client, process } = kit.sim;
  const latch = client.getCountDownLatch('latch');
  while (!kit.stopping()) {
    const op = kit.random.pick(['set', 'countDown', 'countDown', 'await'] as const);
    try {
      if (op === 'set') {
        const n = kit.random.int(1, 3);
        const set = await kit.ledger.timed(`trySetCount(${n})`, process, kit.commandTimeout + 10, () =>
          latch.trySetCount(n),
        );
        count(kit, set ? 'count set' : 'count kept');
      } else if (op === 'countDown') {
        book.countDowns += 1;
        await kit.ledger.timed('countDown()', process, kit.commandTimeout + 10, () => latch.countDown());
        book.answered += 1;
        count(kit, 'counted down');
      } else {
        const waitTime = kit.random.int(50, 2000);
        const since = kit.world.now;
        const done = kit.ledger.wait({ resource: 'latch', process, permits: 1, mode: 'latch' });
        const open = await kit.ledger
          .timed(`await(${waitTime})`, process, waitTime + WAIT_SLACK_MS, () => latch.await({ waitTime }))
          .finally(done);
        if (open && book.openAt < since) {
          kit.world.fail(
            `${process.name}: await() answered true, but the latch was never open since ${since} ms`,
          );
        }
        count(kit, open ? 'opened' : 'still closed');
      }
    } catch (error) {
      settleError(kit, `${op} on the latch`, error);
    }
    await sleep(kit.random.int(0, 60));
  }
}
