import { AsyncResource } from 'node:async_hooks';
import { SimProcess } from './process';

/**
 * The virtual clock and the one queue of everything that happens in the world: timers and
 * immediates of every process, deliveries on the simulated network, the fault plan's moves.
 * Events run one at a time in (time, phase, order) order; the world drains the microtasks after
 * each. An event of a stopped process is held until it resumes, then runs in that turn, timers
 * first and the I/O that waited after them, as Node runs a loop that stood still; an event of a
 * dead process never runs.
 */
export const enum Phase {
  Timer = 0,
  Io = 1,
  Immediate = 2,
}

export interface SimEvent {
  at: number;
  phase: Phase;
  seq: number;
  process: SimProcess | undefined;
  run: () => void;
  cancelled: boolean;
  /** What the trace says of it (undefined: a timer, which the trace does not list one by one). */
  label?: string;
  /** Held while its process stood still: it runs before what came due in the same ms after it. */
  released?: boolean;
}

/** A Timeout as Node's setTimeout returns it, as far as rlock uses one. */
export class SimTimer {
  private refed = true;
  event: SimEvent;
  constructor(
    private readonly clock: VirtualClock,
    private readonly make: () => SimEvent,
    readonly repeat: number | undefined,
  ) {
    this.event = make();
  }
  unref(): this {
    this.refed = false;
    return this;
  }
  ref(): this {
    this.refed = true;
    return this;
  }
  hasRef(): boolean {
    return this.refed;
  }
  refresh(): this {
    this.event.cancelled = true;
    this.event = this.make();
    return this;
  }
  close(): this {
    this.event.cancelled = true;
    return this;
  }
  [Symbol.toPrimitive](): number {
    return this.event.seq;
  }
}

export class VirtualClock {
  now: number;
  private seq = 0;
  private readonly heap: SimEvent[] = [];
  private readonly held = new Map<SimProcess, SimEvent[]>();
  /** Events run so far. */
  steps = 0;

  constructor(start: number) {
    this.now = start;
  }

  schedule(
    at: number,
    phase: Phase,
    run: () => void,
    process = SimProcess.current(),
    label?: string,
  ): SimEvent {
    const event: SimEvent = {
      at: Math.max(at, this.now),
      phase,
      seq: (this.seq += 1),
      process,
      run,
      cancelled: false,
      label,
    };
    this.push(event);
    return event;
  }

  /** A timer of the current process; its callback runs in the async context it was set in. */
  setTimer(fn: (...args: unknown[]) => void, ms: unknown, args: unknown[], repeat: boolean): SimTimer {
    let delay = Number(ms);
    // As Node: NaN, negative or too large delays become 1 ms.
    if (!Number.isFinite(delay) || delay < 1 || delay > 2 ** 31 - 1) delay = 1;
    delay = Math.floor(delay);
    const bound = AsyncResource.bind(() => fn(...args));
    const process = SimProcess.current();
    let timer: SimTimer | undefined = undefined;
    const make = (): SimEvent =>
      this.schedule(
        this.now + delay,
        Phase.Timer,
        () => {
          if (repeat && timer) timer.event = make();
          bound();
        },
        process,
      );
    timer = new SimTimer(this, make, repeat ? delay : undefined);
    return timer;
  }

  setImmediate(fn: (...args: unknown[]) => void, args: unknown[]): SimTimer {
    const bound = AsyncResource.bind(() => fn(...args));
    const process = SimProcess.current();
    return new SimTimer(this, () => this.schedule(this.now, Phase.Immediate, bound, process), undefined);
  }

  /** The next event that may run now, or undefined when nothing is left before `until`. */
  next(until: number): SimEvent | undefined {
    for (;;) {
      const top = this.heap[0];
      if (!top || top.at > until) return undefined;
      this.pop();
      if (top.cancelled) continue;
      const { process } = top;
      if (process?.state === 'dead') continue;
      if (process?.state === 'paused') {
        const held = this.held.get(process) ?? [];
        held.push(top);
        this.held.set(process, held);
        continue;
      }
      this.now = Math.max(this.now, top.at);
      this.steps += 1;
      return top;
    }
  }

  /** A resumed process: what came due while it stood still runs now, timers first, then its I/O. */
  release(process: SimProcess): void {
    const held = this.held.get(process) ?? [];
    this.held.delete(process);
    held.sort((a, b) => a.phase - b.phase || a.at - b.at || a.seq - b.seq);
    for (const event of held) {
      event.at = this.now;
      event.released = true;
      event.seq = this.seq += 1;
      this.push(event);
    }
  }

  /** Forgets every event of a dead process. */
  drop(process: SimProcess): void {
    this.held.delete(process);
  }

  /** Whether anything is scheduled at all (held events of stopped processes count). */
  get idle(): boolean {
    return this.heap.every((event) => event.cancelled) && this.held.size === 0;
  }

  /** When the next event is due (Infinity: none). */
  get nextAt(): number {
    while (this.heap[0]?.cancelled) this.pop();
    return this.heap[0]?.at ?? Infinity;
  }

  private before(a: SimEvent, b: SimEvent): boolean {
    if (a.at !== b.at) return a.at < b.at;
    if (a.phase !== b.phase) return a.phase < b.phase;
    // A socket's deliveries held while its process stood still came due before one due now.
    if (a.released !== b.released) return a.released === true;
    return a.seq < b.seq;
  }

  private push(event: SimEvent): void {
    const { heap } = this;
    heap.push(event);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(heap[i] as SimEvent, heap[parent] as SimEvent)) break;
      [heap[i], heap[parent]] = [heap[parent] as SimEvent, heap[i] as SimEvent];
      i = parent;
    }
  }

  private pop(): void {
    const { heap } = this;
    const last = heap.pop() as SimEvent;
    if (heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < heap.length && this.before(heap[l] as SimEvent, heap[best] as SimEvent)) best = l;
      if (r < heap.length && this.before(heap[r] as SimEvent, heap[best] as SimEvent)) best = r;
      if (best === i) return;
      [heap[i], heap[best]] = [heap[best] as SimEvent, heap[i] as SimEvent];
      i = best;
    }
  }
}
