import type { SimProcess } from '../world/process';

/**
 * What the workloads' tasks believe and wait for, written by the workloads as they go: who is in a
 * critical section of which lock, who waits, which calls are out and since when. The checks hold
 * Redis (what the simulated servers hold) against it.
 */

/** A body running under a lock (or permits): its owner believes it holds until it leaves. */
export interface Belief {
  resource: string;
  /** 'exclusive': alone; 'read': beside other readers; 'permits': `permits` of a semaphore. */
  mode: 'exclusive' | 'read' | 'write' | 'permits';
  permits: number;
  ownerId: string | undefined;
  process: SimProcess;
  since: number;
  /** The lease is lost and the owner was told (its signal aborted, or lockLost). */
  told: () => boolean;
}

/** A task waiting to acquire. */
export interface Wait {
  resource: string;
  process: SimProcess;
  since: number;
  /** Permits wanted (semaphores); 1 for locks. */
  permits: number;
  mode: 'exclusive' | 'read' | 'write' | 'permits' | 'latch';
}

/**
 * Virtual time runs in whole ms, and a budget's timer fires in the ms after it is due: a call that
 * settles 2 ms late has kept its budget. (Anything later does not.)
 */
export const ROUNDING_MS = 2;

/** A call out: it must settle within `budget` ms of its process' running time (Infinity: unbounded). */
export interface Call {
  what: string;
  process: SimProcess;
  since: number;
  budget: number;
}

export class Ledger {
  readonly beliefs = new Set<Belief>();
  readonly waits = new Set<Wait>();
  readonly calls = new Set<Call>();
  /** Calls settled, for the figures. */
  settled = 0;
  /** The longest a call took beyond nothing, relative to its budget (for the figures). */
  worstBudgetUse = 0;

  constructor(
    private readonly now: () => number,
    private readonly fail: (message: string) => void,
  ) {}

  believe(belief: Omit<Belief, 'since'>): () => void {
    const entry = { ...belief, since: this.now() };
    this.beliefs.add(entry);
    return () => this.beliefs.delete(entry);
  }

  wait(wait: Omit<Wait, 'since'>): () => void {
    const entry = { ...wait, since: this.now() };
    this.waits.add(entry);
    return () => this.waits.delete(entry);
  }

  /**
   * Runs `call`, checking that it settles within its budget: `budget` ms of the process' running
   * time, plus, for the time the process stood still, that time once more (up to the budget: the
   * library gives a call whose command could not go out during a stall the stall's time again).
   */
  async timed<T>(what: string, process: SimProcess, budget: number, call: () => Promise<T>): Promise<T> {
    const entry: Call = { what, process, since: this.now(), budget };
    this.calls.add(entry);
    try {
      return await call();
    } finally {
      this.calls.delete(entry);
      this.settled += 1;
      this.checkBudget(entry);
    }
  }

  /** The time `call` may take by now: its budget, plus its process' stall (twice, as above). */
  allowed(call: Call, at: number): number {
    const stood = call.process.pausedWithin(call.since, at);
    return call.budget + stood + Math.min(stood, call.budget) + ROUNDING_MS;
  }

  private checkBudget(call: Call): void {
    if (call.budget === Infinity || call.process.state === 'dead') return;
    const took = this.now() - call.since;
    const allowed = this.allowed(call, this.now());
    this.worstBudgetUse = Math.max(this.worstBudgetUse, took / allowed);
    if (took > allowed) {
      this.fail(`${call.process.name}: ${call.what} took ${took} ms, over its budget of ${allowed} ms`);
    }
  }

  /** Calls still out past their budget (a call that never settles fails here, not at its end). */
  overdue(): Call[] {
    const now = this.now();
    return [...this.calls].filter(
      (call) =>
        call.budget !== Infinity &&
        call.process.state === 'running' &&
        now - call.since > this.allowed(call, now),
    );
  }
}
