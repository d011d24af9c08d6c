/**
 * One contending worker process: lock, hold, unlock, think, until the time is up; then it sends
 * every acquisition it made to the parent.
 * argv: <library> <port> <key> <durationMs> <holdMs> <thinkMs>
 */
import { openLibrary, type LibraryName } from './adapters';
import { now, sleep } from './clock';

export interface Acquisition {
  worker: number;
  requestedAt: number;
  acquiredAt: number;
  releasedAt: number;
}

const [library, port, key, durationMs, holdMs, thinkMs] = process.argv.slice(2);

async function main(): Promise<void> {
  const lib = await openLibrary(library as LibraryName, Number(port));
  const acquisitions: Acquisition[] = [];
  const errors: string[] = [];
  const until = now() + Number(durationMs);
  while (now() < until) {
    const requestedAt = now();
    try {
      const release = await lib.lock(key as string);
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
