/**
 * Every library behind one small interface, each used the way its README shows, with its defaults
 * unless the scenario needs otherwise (redlock: infinite retries, as the benchmark brief asks).
 */
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';
import { Redisson } from 'node-redisson';
import { openHandoffFloor } from './handoff-floor';
import { floorLock } from './layout-floor';
import type * as Rlock from '../src';

/**
 * rlock as its users run it: the built package (`npm run bench` builds it first). Not src/ through
 * tsx: tsx compiles with esbuild's keepNames, which wraps every function created at run time in a
 * defineProperty call. Side by side in one run that cost rlock 129 µs of client CPU per lock +
 * unlock against 109 µs from dist/ (p50 1.62x against 1.48x the fastest peer), which no user pays;
 * the other libraries are measured as published.
 */
function loadBuiltRlock(): typeof Rlock {
  const root = resolve(__dirname, '..');
  const built = join(root, 'dist', 'index.cjs');
  const newest = (dir: string): number =>
    Math.max(
      ...readdirSync(dir, { withFileTypes: true }).map((entry) =>
        entry.isDirectory() ? newest(join(dir, entry.name)) : statSync(join(dir, entry.name)).mtimeMs,
      ),
    );
  let builtAt = 0;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    // not built
  }
  if (builtAt < Math.max(newest(join(root, 'src')), newest(join(root, 'lua')))) {
    throw new Error('dist/ is missing or older than src/ or lua/: run `npm run build` (npm run bench does)');
  }
  return createRequire(__filename)(built) as typeof Rlock;
}

/**
 * Another build of rlock, for a before / after in one run (`npm run bench:compare`): the dist/
 * folder of that build. Its workers are told it by the environment variable RLOCK_BUILD.
 */
const otherBuilds = new Map<string, typeof Rlock>();
function rlockOf(build: string | undefined): typeof Rlock {
  if (build === undefined) return (own ??= loadBuiltRlock());
  let loaded = otherBuilds.get(build);
  if (!loaded) {
    loaded = createRequire(__filename)(join(resolve(build), 'index.cjs')) as typeof Rlock;
    otherBuilds.set(build, loaded);
  }
  return loaded;
}
let own: typeof Rlock | undefined;

/** This checkout's build, or the one RLOCK_BUILD names (a worker of `npm run bench:compare`). */
export const { LockClient } = rlockOf(process.env.RLOCK_BUILD || undefined);

/** Releases what `lock` took. */
export type Release = () => Promise<void>;

export interface Library {
  /** Takes the lock `key`, waiting as long as it takes. */
  lock(key: string): Promise<Release>;
  /** Takes the lock `key` and keeps it alive with the library's own renewal until released. */
  holdRenewed(key: string): Promise<Release>;
  /** How often the library renews a held lock, in ms. */
  renewalPeriodMs: number;
  /**
   * The period of a timer that keeps waiters alive in Redis, in ms (rlock's watchdog refreshes
   * fair-lock places); undefined when waiters poll or sleep instead.
   */
  waiterTimerMs?: number;
  close(): Promise<void>;
}

export interface LibraryOptions {
  /** Lease / watchdog period where the library has one, in ms. */
  leaseMs?: number;
  /** rlock only: the dist/ folder of another build to measure (see rlockOf). */
  build?: string;
}

export const LIBRARIES = ['rlock', 'rlock-fair', 'redlock', 'redis-semaphore', 'node-redisson'] as const;
export type LibraryName = (typeof LIBRARIES)[number];

/**
 * Not a lock library: the two commands every lock needs at least, SET NX PX and a compare-and-delete
 * script (EVALSHA, as every library sends its scripts). Figures per pair are judged against it.
 */
export const BASELINE = 'set-nx' as const;
/** Not a lock library either: Redisson's layout with rlock's two checks, and nothing else (see layout-floor.ts). */
export const LAYOUT_FLOOR = 'layout-floor' as const;
/** Not a lock library either: a direct hand-off and nothing else, measured contended (see handoff-floor.ts). */
export const HANDOFF_FLOOR = 'handoff-floor' as const;
export type Subject = LibraryName | typeof BASELINE | typeof LAYOUT_FLOOR | typeof HANDOFF_FLOOR;
/** The subjects that are not libraries, measured uncontended beside them. */
export const REFERENCES = [BASELINE, LAYOUT_FLOOR] as const;
/** Every subject, in the order of the report's tables. */
export const ALL_SUBJECTS: Subject[] = [...REFERENCES, HANDOFF_FLOOR, ...LIBRARIES];

export const LABELS: Record<Subject, string> = {
  rlock: 'rlock getLock',
  'rlock-fair': 'rlock getFairLock',
  redlock: 'redlock 5',
  'redis-semaphore': 'redis-semaphore Mutex',
  'node-redisson': 'node-redisson getLock',
  [BASELINE]: 'SET NX PX + compare-and-delete EVAL',
  [LAYOUT_FLOOR]: "floor of Redisson's layout + rlock's checks (two scripts)",
  [HANDOFF_FLOOR]: 'floor of a direct hand-off (queue, grant, message)',
};

/** The libraries rlock is compared with. */
export const PEERS: LibraryName[] = ['redlock', 'redis-semaphore', 'node-redisson'];

const COMPARE_AND_DELETE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/** The baseline's lock on a connection: takes `key` (failing instead of waiting) and resolves with its release. */
function baselineLock(redis: Redis): (key: string) => Promise<Release> {
  redis.defineCommand('compareAndDelete', { lua: COMPARE_AND_DELETE, numberOfKeys: 1 });
  const del = redis as unknown as { compareAndDelete(key: string, token: string): Promise<number> };
  const prefix = `${process.pid}:${Date.now()}`;
  let count = 0;
  return async (key: string): Promise<Release> => {
    const token = `${prefix}:${(count += 1)}`;
    if ((await redis.set(key, token, 'PX', 30_000, 'NX')) !== 'OK') throw new Error(`${key} is taken`);
    return async () => {
      await del.compareAndDelete(key, token);
    };
  };
}

/** A reference subject (not a library) as a Library, on a connection of its own: measured uncontended only. */
function openReference(port: number, lockOn: (redis: Redis) => (key: string) => Promise<Release>): Library {
  const redis = new Redis({ port, host: '127.0.0.1' });
  const lock = lockOn(redis);
  return {
    lock,
    holdRenewed: lock,
    renewalPeriodMs: Number.NaN,
    async close() {
      redis.disconnect();
    },
  };
}

/** A library, or a reference. */
export function openSubject(name: Subject, port: number): Promise<Library> {
  if (name === BASELINE) return Promise.resolve(openReference(port, baselineLock));
  if (name === LAYOUT_FLOOR) return Promise.resolve(openReference(port, floorLock));
  if (name === HANDOFF_FLOOR) return openHandoffFloor(port);
  return openLibrary(name, port);
}

export async function openLibrary(
  name: LibraryName,
  port: number,
  options: LibraryOptions = {},
): Promise<Library> {
  const connect = (): Redis => new Redis({ port, host: '127.0.0.1' });
  switch (name) {
    case 'rlock':
    case 'rlock-fair': {
      const redis = connect();
      const watchdogTimeout = options.leaseMs ?? 30_000;
      const Client = options.build === undefined ? LockClient : rlockOf(options.build).LockClient;
      const client = new Client(redis, { watchdogTimeout });
      const take = async (key: string): Promise<Release> => {
        const lock = name === 'rlock' ? client.getLock(key) : client.getFairLock(key);
        await lock.lock();
        return () => lock.unlock();
      };
      return {
        lock: take,
        holdRenewed: take,
        renewalPeriodMs: watchdogTimeout / 3,
        waiterTimerMs: Math.min(watchdogTimeout, client.fairLockWaitTimeout) / 3,
        async close() {
          await client.close();
          redis.disconnect();
        },
      };
    }
    case 'redlock': {
      const redis = connect();
      const redlock = new Redlock([redis], { retryCount: -1 });
      redlock.on('error', () => undefined);
      const lease = options.leaseMs ?? 10_000;
      return {
        async lock(key) {
          const lock = await redlock.acquire([key], lease);
          return async () => {
            await lock.release();
          };
        },
        // redlock renews only inside using(): it extends the lease when it is about to run out.
        async holdRenewed(key) {
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          let held!: () => void;
          const acquired = new Promise<void>((resolve) => (held = resolve));
          const run = redlock.using([key], lease, async () => {
            held();
            await released;
          });
          await Promise.race([acquired, run]);
          return async () => {
            release();
            await run;
          };
        },
        renewalPeriodMs: lease - 500,
        async close() {
          redis.disconnect();
        },
      };
    }
    case 'redis-semaphore': {
      const redis = connect();
      const lockTimeout = options.leaseMs ?? 10_000;
      const take = async (key: string): Promise<Release> => {
        const mutex = new Mutex(redis, key, options.leaseMs ? { lockTimeout } : {});
        await mutex.acquire();
        return () => mutex.release();
      };
      return {
        lock: take,
        holdRenewed: take,
        renewalPeriodMs: lockTimeout * 0.8,
        async close() {
          redis.disconnect();
        },
      };
    }
    case 'node-redisson': {
      const redisson = new Redisson({
        redis: { options: { port, host: '127.0.0.1' } },
        ...(options.leaseMs ? { lockWatchdogTimeout: BigInt(options.leaseMs) } : {}),
      });
      const take = async (key: string): Promise<Release> => {
        const lock = redisson.getLock(key);
        await lock.lock();
        return () => lock.unlock();
      };
      return {
        lock: take,
        holdRenewed: take,
        renewalPeriodMs: (options.leaseMs ?? 30_000) / 3,
        async close() {
          await redisson.quit();
        },
      };
    }
  }
}
