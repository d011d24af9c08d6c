import type { RedisConnection } from './connection';
import type { RedisCalls } from './redis-calls';
import type { ReconnectCounter } from './reconnect-counter';
import type { StepLimits } from './redis-calls';

/** How long one reading of the server's clock is trusted before it is read again (in the background). */
const READ_AGAIN_MS = 60_000;

/**
 * Redis' clock as this client reckons it: the server time (epoch ms) that goes with
 * performance.now(), read with TIME when first needed, and again after a reconnect (a failover may
 * bring a server with another clock), after READ_AGAIN_MS, or when a request found its window
 * closed on arrival. A request's window is written in server time (see openWindow) because the
 * script that checks it and the key that outlives it both go by Redis' clock: an estimate that is
 * off by a few ms (half a round trip at most, plus drift) only makes a window that much shorter or
 * longer, never lets a copy act after its latch is gone.
 */
export class ServerClock {
  /** Server ms minus performance.now() at the last reading. */
  private offset: number | undefined;
  private readAt = -Infinity;
  private readAfterCloses = -1;
  private reading: Promise<number> | undefined;

  constructor(
    private readonly calls: RedisCalls,
    private readonly redis: RedisConnection,
    private readonly reconnects: ReconnectCounter,
  ) {}

  /**
   * The server's time now, in epoch ms: at once from the last reading, or (the first time, or
   * after invalidate) once the server answered TIME, within `limits` (default: a call's budget);
   * `name` is the lock or synchronizer the reading is for, named in its error. Callers that come
   * while a reading is out share it, each within its own limits.
   */
  now(name: string, limits?: StepLimits): number | Promise<number> {
    const { offset } = this;
    if (offset === undefined) return this.read(name, limits);
    if (this.reconnects.count !== this.readAfterCloses || performance.now() - this.readAt > READ_AGAIN_MS) {
      // The last reading serves meanwhile: a clock does not jump by a window in a minute.
      this.read(name).catch(() => undefined);
    }
    return Math.round(performance.now() + offset);
  }

  /** The reading is not to be trusted any more: the next now() reads the clock again first. */
  invalidate(): void {
    this.offset = undefined;
  }

  private read(name: string, limits?: StepLimits): Promise<number> {
    const { reading } = this;
    if (reading) {
      // A reading that is out serves this caller too, within the caller's own budget (a change
      // going on in the background reads with as long a budget as it has).
      return this.calls.run(name, 'time', () => reading, limits);
    }
    const mine = this.readTime(name, limits).finally(() => {
      if (this.reading === mine) this.reading = undefined;
    });
    this.reading = mine;
    return mine;
  }

  private async readTime(name: string, limits?: StepLimits): Promise<number> {
    const closes = this.reconnects.count;
    const sentAt = performance.now();
    const [seconds, micros] = await this.calls.run(name, 'time', () => this.redis.time(), limits);
    const answeredAt = performance.now();
    const serverMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    // The server read its clock somewhere between the two: the middle is off by half a round trip at most.
    this.offset = serverMs - (sentAt + answeredAt) / 2;
    this.readAt = answeredAt;
    this.readAfterCloses = closes;
    return Math.round(answeredAt + this.offset);
  }
}
