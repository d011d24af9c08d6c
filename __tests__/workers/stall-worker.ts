/**
 * A client in its own process that the test stops (SIGSTOP) and resumes (SIGCONT), as a paused
 * process is: argv <redisPort>. Reports 'ready', then on each message:
 *   wait   waits up to 1 s for sp-plain, sp-fair and the semaphore sp-sem (held by the test), reports
 *          'waiting', then the outcomes as JSON (false, or the error's code)
 *   calls  sends single calls (on a lock it holds, and the semaphore), stops itself (SIGSTOP) as
 *          soon as they are written, and once resumed reports their outcomes as JSON
 *   hold   takes sp-lease with the watchdog (watchdogTimeout 1 s) and reports 'held'
 *   report unlocks sp-lease and reports, as JSON, the lockLost events seen (name:code) and how
 *          unlock() ended
 */
import { LockClient } from '../../src';
import { connectTo } from '../helpers/deployment';

const [port] = process.argv.slice(2);

/** What a call settled with: its value, or its error's code. */
function settle(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    (value) => value,
    (error: unknown) => (error as { code?: string }).code ?? String(error),
  );
}

async function settleAll(calls: Record<string, Promise<unknown>>): Promise<string> {
  const entries = await Promise.all(
    Object.entries(calls).map(async ([name, work]) => [name, await settle(work)] as const),
  );
  return JSON.stringify(Object.fromEntries(entries));
}

async function main(): Promise<void> {
  const redis = connectTo(Number(port));
  redis.on('error', () => undefined);
  const client = new LockClient(redis, { commandTimeout: 1_000 });
  // A client of its own for 'hold': its short lease must not end the holds of the other modes.
  const shortLeases = new LockClient(redis, { commandTimeout: 1_000, watchdogTimeout: 1_000 });
  const lost: string[] = [];
  shortLeases.on('lockLost', (event) => lost.push(`${event.name}:${event.code}`));
  const lease = shortLeases.getLock('sp-lease');
  const held = client.getLock('sp-own');
  await held.lock();
  const semaphore = client.getSemaphore('sp-sem');
  await semaphore.availablePermits();
  await held.isLocked();
  process.on('message', (message) => {
    if (message === 'wait') {
      const waits = {
        plain: client.getLock('sp-plain').tryLock(1_000),
        fair: client.getFairLock('sp-fair').tryLock(1_000),
        semaphore: semaphore.tryAcquire(1, 1_000),
      };
      process.send?.('waiting');
      void settleAll(waits).then((outcomes) => process.send?.(outcomes));
    } else if (message === 'calls') {
      const calls = {
        isLocked: held.isLocked(),
        holdCount: held.getHoldCount(),
        unlock: held.unlock().then(() => 'released'),
        permits: semaphore.availablePermits(),
      };
      process.kill(process.pid, 'SIGSTOP');
      void settleAll(calls).then((outcomes) => process.send?.(outcomes));
    } else if (message === 'hold') {
      void lease.lock().then(() => process.send?.('held'));
    } else if (message === 'report') {
      void settle(lease.unlock()).then((unlock) => process.send?.(JSON.stringify({ lost, unlock })));
    }
  });
  process.send?.('ready');
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exit(1);
});
