import type { LockClient } from '../../src';
import { sleep } from './wait';

/**
 * `holder` takes `name` with the watchdog (a 30 s lease), `waiter` waits for it, `holder` releases:
 * the waiter must hold it within a second, which only the release's message can bring about.
 */
export async function expectWokenByRelease(
  holder: LockClient,
  waiter: LockClient,
  kind: 'getLock' | 'getFairLock',
  name: string,
): Promise<void> {
  const held = holder[kind](name);
  await held.lock();
  const waiting = waiter[kind](name).tryLock(5_000);
  await sleep(100);
  const releasedAt = performance.now();
  await held.unlock();
  expect(await waiting).toBe(true);
  expect(performance.now() - releasedAt).toBeLessThan(1_000);
}
