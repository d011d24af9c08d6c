import { monitorEventLoopDelay } from 'node:perf_hooks';
import { STALL_MS } from '../../src/util/timing';
import { WAIT_SLACK_MS } from '../../src/waiting/acquire-or-wait';

/**
 * What the fault tests allow a call past its documented budget. The docs promise that a wait
 * settles within waitTime + WAIT_SLACK_MS (200 ms) and a single call within commandTimeout, whatever
 * Redis does, plus whatever the client's own event loop is late by (docs/reliability.md). MARGIN_MS
 * is this machine's share: timers that fire late and the test's own turns on a shared 2-core
 * machine running two test files at once. Over three runs of `npm run test:faults` the latest
 * answer in a run without a stall came 69 ms past its budget; MARGIN_MS leaves some room above that
 * and stays below the 200 ms that a wait overrunning its slack would add.
 */
export const MARGIN_MS = 100;

/**
 * The test process's event loop, watched for stalls. Once in three runs every call of one test
 * answered 280 ms late together: the process had stood still, and rlock rightly gives a call the
 * time its loop stood still, up to its budget once more (see Deadlines and CallInFlight.expire).
 * A stall longer than STALL_MS seen during the test adds itself and the slack to what is allowed.
 */
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
beforeEach(() => loop.reset());

/** What the stalls of this test's event loop so far allow on top of a budget, in ms. */
function stalledMs(): number {
  const longest = loop.max / 1e6;
  return longest > STALL_MS ? longest + WAIT_SLACK_MS : 0;
}

/** The longest a wait of `waitTime` may take in a fault test: what the docs promise, and the margin. */
export const waitBudget = (waitTime: number): number => waitTime + WAIT_SLACK_MS + MARGIN_MS + stalledMs();

/** The longest a single call may take in a fault test: its commandTimeout, and the margin. */
export const callBudget = (commandTimeout: number): number => commandTimeout + MARGIN_MS + stalledMs();
