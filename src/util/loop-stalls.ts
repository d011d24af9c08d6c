/**
 * Tells whether this process stood still a moment ago: stopped (SIGSTOP, a laptop's sleep), paused
 * by the garbage collector, or its event loop blocked by synchronous work. A message read right
 * after such a stall may have waited in the socket all that time, so it may be older than it looks.
 *
 * While someone needs it, a timer ticks every `tolerance` ms. A stall shows either way the loop
 * resumes: a tick that comes more than two periods after the one before (timers ran first), or a
 * question asked more than two periods after the last tick (the message is read before the late
 * tick runs). A stall of less than about `tolerance` goes unseen; one of more than twice it never does.
 *
 * Needed while a client has fair waiters, which on a busy lock come and go with every acquisition:
 * the timer is not stopped when the last one leaves, but stops itself after IDLE_TICKS ticks that
 * found nobody needing it (`needed`), so that an acquisition costs no timer of its own.
 */

/** Ticks in a row that found nobody needing the watch before it stops. */
const IDLE_TICKS = 8;
export class LoopStalls {
  private timer?: NodeJS.Timeout;
  private lastTick = 0;
  /** When the last stall was noticed (performance.now()). */
  private stalledAt = -Infinity;
  private idleTicks = 0;

  constructor(
    private readonly tolerance: number,
    /** Whether someone needs the watch now; the timer stops once nobody has for a while. */
    private readonly needed: () => boolean = () => true,
  ) {}

  /** Watches from now on (until stop(), or nobody needs it for a while), if it does not already. */
  start(): void {
    this.idleTicks = 0;
    if (this.timer) return;
    this.lastTick = performance.now();
    this.timer = setInterval(() => this.tick(), this.tolerance);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Whether the process may have stood still for `tolerance` ms or more just before now. */
  get justStalled(): boolean {
    const now = performance.now();
    return now - this.lastTick > 2 * this.tolerance || now - this.stalledAt < this.tolerance;
  }

  private tick(): void {
    const now = performance.now();
    if (now - this.lastTick > 2 * this.tolerance) this.stalledAt = now;
    this.lastTick = now;
    if (this.needed()) this.idleTicks = 0;
    else if ((this.idleTicks += 1) >= IDLE_TICKS) this.stop();
  }
}
