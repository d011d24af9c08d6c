/**
 * The loop of a contending worker process: take, hold, give back, think, until the time is up;
 * then it sends the acquisitions it made in the measured window to the parent and exits. The lock and semaphore
 * workers differ only in what they take.
 *
 * A worker warms up before it counts (see bench/contenders.ts for the parent's side): alone, on a
 * key of its own; it then tells the parent it is ready and waits for the start, which every worker
 * gets at once; it competes from then on, and what happens in the first second is not counted:
 * only acquisitions made inside the measured window, and the CPU time between its two ends. Without
 * that, a round measured eight Node processes starting (loading, compiling and optimizing on two
 * cores while the first of them already competed), not a lock handed on between services that have
 * been up a while.
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
  holdMs: number;
  thinkMs: number;
}

/** What the parent sends every worker once all are ready (it starts them): the measured window. */
export interface Start {
  /** now() at which the measured window begins, a second after the start. */
  measureFrom: number;
  /** now() at which the measured window ends. */
  until: number;
}

/** Lock + unlock pairs each worker runs alone before it reports ready. */
const SOLO_WARM_UP_PAIRS = 500;

/** Take, hold, give back, think, until `until`; each acquisition and error is recorded. */
async function cycles(
  contender: Contender,
  key: string,
  until: number,
  round: Round,
  acquisitions: Acquisition[],
  errors: string[],
): Promise<void> {
  while (now() < until) {
    const requestedAt = now();
    try {
      const giveBack = await contender.take(key);
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
}

/** Tells the parent this worker is ready, and waits for the start it sends every worker. */
function ready(): Promise<Start> {
  return new Promise((resolveStart) => {
    process.once('message', (start) => resolveStart(start as Start));
    process.send?.({ ready: true });
  });
}

/** This process' CPU time at `at` (now() time), read by a timer then: a promise of it in µs. */
function cpuAt(at: number): Promise<number> {
  return new Promise((resolveCpu) => setTimeout(() => resolveCpu(cpuMicros()), Math.max(0, at - now())));
}

export async function contend(open: () => Promise<Contender>, round: Round): Promise<never> {
  // A worker whose parent is gone has nobody to report to, nor a start to wait for.
  process.on('disconnect', () => process.exit(1));
  try {
    const contender = await open();
    const errors: string[] = [];
    const soloKey = `${round.key}:warm-up:${process.pid}`;
    for (let i = 0; i < SOLO_WARM_UP_PAIRS; i += 1) {
      const giveBack = await contender.take(soloKey);
      await giveBack();
    }
    const start = await ready();
    const cpu = Promise.all([cpuAt(start.measureFrom), cpuAt(start.until)]);
    const all: Acquisition[] = [];
    // An error at any time, warm or measured, fails the round: a library that errors is not measured.
    await cycles(contender, round.key, start.until, round, all, errors);
    const [cpuFrom, cpuUntil] = await cpu;
    const acquisitions = all.filter((a) => a.acquiredAt >= start.measureFrom && a.acquiredAt < start.until);
    process.send?.({
      acquisitions,
      errors: errors.slice(0, 5),
      errorCount: errors.length,
      cpuMicros: cpuUntil - cpuFrom,
    });
    await contender.close();
    process.exit(0);
  } catch (error) {
    process.send?.({ acquisitions: [], errors: [String(error)], errorCount: 1 });
    process.exit(1);
  }
}
