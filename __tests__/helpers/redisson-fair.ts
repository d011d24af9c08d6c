import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';

/**
 * A Java service on Redisson's RFairLock, played by raw commands doing what Redisson does to Redis:
 * its waiting threads in redisson_lock_queue:{name}, each with a timeout in
 * redisson_lock_timeout:{name} (client epoch ms: the timeout of the thread before it, or the lock's
 * ttl, plus the thread's wait; whoever acquires takes its wait off everyone behind); a thread
 * takes a free lock only when it heads that queue; a release tells the head on
 * redisson_lock__channel:{name}:<thread>, where it waits, and nobody else.
 */
export class JavaFairLock {
  readonly thread = `${randomUUID()}:1`;

  constructor(
    private readonly redis: Redis,
    /** A connection of its own for the thread's channel. */
    private readonly subscriber: Redis,
    private readonly name: string,
    /** Redisson's threadWaitTime (5 min by default). */
    private readonly waitMs = 300_000,
  ) {}

  private get keys(): string[] {
    return [this.name, `redisson_lock_queue:{${this.name}}`, `redisson_lock_timeout:{${this.name}}`];
  }

  private get channel(): string {
    return `redisson_lock__channel:{${this.name}}:${this.thread}`;
  }

  /** One attempt: null when taken, else the ttl to wait for (the thread stays queued). */
  async tryAcquire(leaseMs = 30_000): Promise<number | null> {
    const answer = await this.redis.eval(
      `-- threads whose time is up leave the head of the queue
       while true do
         local first = redis.call('lindex', KEYS[2], 0)
         if not first then break end
         local timeout = redis.call('zscore', KEYS[3], first)
         if timeout and tonumber(timeout) <= tonumber(ARGV[3]) then
           redis.call('zrem', KEYS[3], first) redis.call('lpop', KEYS[2])
         else break end
       end
       if redis.call('exists', KEYS[1]) == 0
         and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
         redis.call('lpop', KEYS[2]) redis.call('zrem', KEYS[3], ARGV[2])
         for _, other in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
           redis.call('zincrby', KEYS[3], -tonumber(ARGV[4]), other)
         end
         redis.call('hset', KEYS[1], ARGV[2], 1) redis.call('pexpire', KEYS[1], ARGV[1])
         return nil
       end
       if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
         redis.call('hincrby', KEYS[1], ARGV[2], 1) redis.call('pexpire', KEYS[1], ARGV[1])
         return nil
       end
       if redis.call('zscore', KEYS[3], ARGV[2]) then return math.max(0, redis.call('pttl', KEYS[1])) end
       local last = redis.call('lindex', KEYS[2], -1)
       local ttl
       if last and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) then
         ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[3])
       else
         ttl = redis.call('pttl', KEYS[1])
       end
       if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[4]) + tonumber(ARGV[3]), ARGV[2]) == 1 then
         redis.call('rpush', KEYS[2], ARGV[2])
       end
       return ttl`,
      3,
      ...this.keys,
      leaseMs,
      this.thread,
      Date.now(),
      this.waitMs,
    );
    return answer === null ? null : Number(answer);
  }

  /**
   * tryLock(waitMs): listens on the thread's channel, then attempts until it takes the lock, waking
   * on a message or the ttl it was given; true when taken, with when (performance.now()).
   */
  async tryLock(waitMs: number, leaseMs = 30_000): Promise<{ taken: boolean; at: number }> {
    let woken: (() => void) | undefined;
    const onMessage = (channel: string): void => {
      if (channel === this.channel) woken?.();
    };
    this.subscriber.on('message', onMessage);
    await this.subscriber.subscribe(this.channel);
    const deadline = performance.now() + waitMs;
    try {
      for (;;) {
        const ttl = await this.tryAcquire(leaseMs);
        if (ttl === null) return { taken: true, at: performance.now() };
        const left = deadline - performance.now();
        if (left <= 0) return { taken: false, at: performance.now() };
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(1, Math.min(ttl, left)));
          woken = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      this.subscriber.off('message', onMessage);
      await this.subscriber.unsubscribe(this.channel);
    }
  }

  /** Releases one hold; the last tells the head of Redisson's queue, as Redisson's unlock does. */
  async unlock(): Promise<void> {
    await this.redis.eval(
      `while true do
         local first = redis.call('lindex', KEYS[2], 0)
         if not first then break end
         local timeout = redis.call('zscore', KEYS[3], first)
         if timeout and tonumber(timeout) <= tonumber(ARGV[2]) then
           redis.call('zrem', KEYS[3], first) redis.call('lpop', KEYS[2])
         else break end
       end
       if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
       if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then return 0 end
       redis.call('del', KEYS[1])
       local next = redis.call('lindex', KEYS[2], 0)
       if next then redis.call('publish', KEYS[4] .. ':' .. next, '0') end
       return 1`,
      4,
      ...this.keys,
      `redisson_lock__channel:{${this.name}}`,
      this.thread,
      Date.now(),
    );
  }
}
