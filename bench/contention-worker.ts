/**
 * One contending worker process: lock, hold, unlock, think, until the time is up; then it sends
 * every acquisition it made to the parent.
 * argv: <library, or the hand-off floor> <port> <key> <holdMs> <thinkMs>; the parent says when to start and stop
 */
import { openSubject, type Subject } from './adapters';
import { contend } from './contention-loop';

const [library, port, key, holdMs, thinkMs] = process.argv.slice(2);

void contend(
  async () => {
    const lib = await openSubject(library as Subject, Number(port));
    return { take: (name) => lib.lock(name), close: () => lib.close() };
  },
  { key: key as string, holdMs: Number(holdMs), thinkMs: Number(thinkMs) },
);
