/**
 * The loop of a contending worker process: take, hold, give back, think, until the time is up;
 * then it sends every acquisition it made to the parent and exits. The lock and semaphore
 * workers differ only in what they take.
 *
 * A worker warms up before it counts (see bench/contenders.ts for the parent's side): alone, on a
 * key of its own; it then tells the parent it is ready and waits for the start, which every worker
 * gets at once; then it competes for a second on a warm-up key shared by all, and only then on the
 * measured key until the common end. Without that, a round measured eight Node processes starting
 * (loading, compiling and optimizing on two cores while the first of them already competed), not
 * a lock handed on between services that have been up a while.
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

/** What the parent sends every worker once all are ready: when to move to the measured key, and stop. */
export interface Start {
  /** now() at which the shared warm-up ends and the measured window begins. */
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

export async function contend(open: () => Promise<Contender>, round: Round): Promise<never> {
  try {
    const contender = await open();
    const errors: string[] = [];
    const soloKey = `${round.key}:warm-up:${process.pid}`;
    for (let i = 0; i < SOLO_WARM_UP_PAIRS; i += 1) {
      const giveBack = await contender.take(soloKey);
      await giveBack();
    }
    const start = await ready();
    await cycles(contender, `${round.key}:warm-up`, start.measureFrom, round, [], errors);
    const acquisitions: Acquisition[] = [];
    const cpuBefore = cpuMicros();
    await cycles(contender, round.key, start.until, round, acquisitions, errors);
    const cpu = cpuMicros() - cpuBefore;
    process.send?.({ acquisitions, errors: errors.slice(0, 5), errorCount: errors.length, cpuMicros: cpu });
    await contender.close();
    process.exit(0);
  } catch (error) {
    process.send?.({ acquisitions: [], errors: [String(error)], errorCount: 1 });
    process.exit(1);
  }
}
