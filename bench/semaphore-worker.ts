/**
 * One contending worker process on a semaphore: acquire a permit, hold, release, think, until the
 * time is up; then it sends every acquisition it made to the parent.
 * argv: <semaphore library> <port> <key> <permits> <durationMs> <holdMs> <thinkMs>
 */
import { now, sleep } from './clock';
import type { Acquisition } from './contention-worker';
import { openSemaphore, type SemaphoreName } from './semaphore-adapters';

const [library, port, key, permits, durationMs, holdMs, thinkMs] = process.argv.slice(2);

async function main(): Promise<void> {
  const lib = await openSemaphore(library as SemaphoreName, Number(port), Number(permits));
  const acquisitions: Acquisition[] = [];
  const errors: string[] = [];
  const until = now() + Number(durationMs);
  while (now() < until) {
    const requestedAt = now();
    try {
      const release = await lib.acquire(key as string);
      const acquiredAt = now();
      await sleep(Number(holdMs));
      const releasedAt = now();
      await release();
      acquisitions.push({ worker: process.pid, requestedAt, acquiredAt, releasedAt });
    } catch (error) {
      errors.push(error instanceof Error ? error.message : String(error));
    }
    await sleep(Number(thinkMs));
  }
  process.send?.({ acquisitions, errors: errors.slice(0, 5), errorCount: errors.length });
  await lib.close();
  process.exit(0);
}

main().catch((error: unknown) => {
  process.send?.({ acquisitions: [], errors: [String(error)], errorCount: 1 });
  process.exit(1);
});
