import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * A simulated OS process: one LockClient with its connections and its tasks. Everything it does
 * runs inside its AsyncLocalStorage store, so the virtual clock knows whose timer it is setting
 * and holds it while the process is stopped (SIGSTOP), or drops it once the process died.
 */
export type ProcessState = 'running' | 'paused' | 'dead';

const current = new AsyncLocalStorage<SimProcess>();

export class SimProcess {
  state: ProcessState = 'running';
  /** Virtual ms spent stopped, for the process' own event-loop accounting. */
  private pausedTotal = 0;
  private pausedSince: number | undefined;
  /** Every pause: [from, to) in virtual ms (to: Infinity while it lasts). */
  readonly pauses: Array<[number, number]> = [];

  constructor(
    readonly name: string,
    private readonly now: () => number,
    readonly startedAt: number,
  ) {}

  static current(): SimProcess | undefined {
    return current.getStore();
  }

  /** Runs fn as this process (its timers, promises and connections are its own from then on). */
  run<T>(fn: () => T): T {
    return current.run(this, fn);
  }

  pause(): void {
    if (this.state !== 'running') return;
    this.state = 'paused';
    this.pausedSince = this.now();
    this.pauses.push([this.now(), Infinity]);
  }

  resume(): void {
    if (this.state !== 'paused') return;
    this.state = 'running';
    this.pausedTotal += this.now() - (this.pausedSince as number);
    this.pausedSince = undefined;
    (this.pauses[this.pauses.length - 1] as [number, number])[1] = this.now();
  }

  kill(): void {
    if (this.state === 'paused') this.resume();
    this.state = 'dead';
  }

  /** How long this process was stopped within [from, to). */
  pausedWithin(from: number, to: number): number {
    let total = 0;
    for (const [start, end] of this.pauses) total += Math.max(0, Math.min(end, to) - Math.max(start, from));
    return total;
  }

  /** Node's event-loop utilization, as a process that is idle whenever it runs and stands still when stopped. */
  loopUtilization(): { idle: number; active: number; utilization: number } {
    const stopped = this.pausedTotal + (this.pausedSince === undefined ? 0 : this.now() - this.pausedSince);
    const idle = this.now() - this.startedAt - stopped;
    const total = idle + stopped;
    return { idle, active: stopped, utilization: total > 0 ? stopped / total : 0 };
  }
}
