/**
 * The loop of a contending worker process: take, hold, give back, think, until the time is up;
 * then it sends every acquisition it made to the parent and exits. The lock and semaphore
 * workers differ only in what they take.
 */
import { cpuMicros, now, sleep } from './clock';

export interface Acquisition {
  worker: number;
  requestedAt: number;
  acquiredAt: number;
  releasedAt: number;
}

export interface Contender {
  /** Takes `key`; resolves with the function that gives it back. */
  take(key: string): Promise<() => Promise<unknown>>;
  close(): Promise<unknown>;
}

export interface Round {
  key: string;
  durationMs: number;
  holdMs: number;
  thinkMs: number;
}

export async function contend(open: () => Promise<Contender>, round: Round): Promise<never> {
  try {
    const contender = await open();
    const acquisitions: Acquisition[] = [];
    const errors: string[] = [];
    const until = now() + round.durationMs;
    const cpuBefore = cpuMicros();
    while (now() < until) {
      const requestedAt = now();
      try {
        const giveBack = await contender.take(round.key);
        const acquiredAt = now();
        await sleep(round.holdMs);
        const releasedAt = now();
        await giveBack();
        acquisitions.push({ worker: process.pid, requestedAt, acquiredAt, releasedAt });
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
      }
      await sleep(round.thinkMs);
    }
    const cpu = cpuMicros() - cpuBefore;
    process.send?.({ acquisitions, errors: errors.slice(0, 5), errorCount: errors.length, cpuMicros: cpu });
    await contender.close();
    process.exit(0);
  } catch (error) {
    process.send?.({ acquisitions: [], errors: [String(error)], errorCount: 1 });
    process.exit(1);
  }
}
