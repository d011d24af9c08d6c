/**
 * One contending worker process on a semaphore: acquire a permit, hold, release, think, until the
 * time is up; then it sends every acquisition it made to the parent.
 * argv: <semaphore library> <port> <key> <permits> <holdMs> <thinkMs>; the parent says when to start
 * and stop
 */
import { contend } from './contention-loop';
import { openSemaphore, type SemaphoreName } from './semaphore-adapters';

const [library, port, key, permits, holdMs, thinkMs] = process.argv.slice(2);

void contend(
  async () => {
    const lib = await openSemaphore(library as SemaphoreName, Number(port), Number(permits));
    return { take: (name) => lib.acquire(name), close: () => lib.close() };
  },
  { key: key as string, holdMs: Number(holdMs), thinkMs: Number(thinkMs) },
);
