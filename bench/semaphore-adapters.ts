/**
 * The semaphores side by side: rlock's getSemaphore and redis-semaphore's Semaphore, each used
 * the way its README shows, with its defaults except a long acquireTimeout (every waiter must get
 * through, as redlock gets infinite retries in the lock scenarios).
 */
import Redis from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import { LockClient } from './adapters';
import type { Release } from './adapters';

export const SEMAPHORES = ['rlock-semaphore', 'redis-semaphore-semaphore'] as const;
export type SemaphoreName = (typeof SEMAPHORES)[number];

export const SEMAPHORE_LABELS: Record<SemaphoreName, string> = {
  'rlock-semaphore': 'rlock getSemaphore',
  'redis-semaphore-semaphore': 'redis-semaphore Semaphore',
};

export interface SemaphoreLibrary {
  /** Takes one permit of semaphore `key` (of `permits`), waiting as long as it takes. */
  acquire(key: string): Promise<Release>;
  close(): Promise<void>;
}

const ACQUIRE_TIMEOUT_MS = 120_000;

export async function openSemaphore(
  name: SemaphoreName,
  port: number,
  permits: number,
): Promise<SemaphoreLibrary> {
  const redis = new Redis({ port, host: '127.0.0.1' });
  if (name === 'rlock-semaphore') {
    const client = new LockClient(redis);
    const set = new Set<string>();
    return {
      async acquire(key) {
        const semaphore = client.getSemaphore(key);
        // The count lives in Redis: set once, by whoever comes first.
        if (!set.has(key)) {
          set.add(key);
          await semaphore.trySetPermits(permits);
        }
        await semaphore.acquire();
        return () => semaphore.release();
      },
      async close() {
        await client.close();
        redis.disconnect();
      },
    };
  }
  return {
    async acquire(key) {
      const semaphore = new Semaphore(redis, key, permits, { acquireTimeout: ACQUIRE_TIMEOUT_MS });
      await semaphore.acquire();
      return () => semaphore.release();
    },
    async close() {
      redis.disconnect();
    },
  };
}
