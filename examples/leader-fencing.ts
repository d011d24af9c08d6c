/**
 * Leader election with fencing tokens: one of several candidates leads, and the store it writes to
 * refuses a leader whose time is up.
 *
 * Every candidate waits for the fenced lock `leader:<name>`; the holder leads for as long as its
 * process lives (the watchdog renews the lease; no fixed lease to guess). Each acquisition comes
 * with a fencing token larger than every token before it. The leader writes to the store with its
 * token, and the store — a compare-and-set script on a Redis hash — keeps the largest token it
 * accepted and refuses smaller ones.
 *
 * Why the store must check: a leader that pauses past its lease (a GC pause, a frozen VM, a closed
 * laptop lid, SIGSTOP) loses the lock without knowing, and another candidate takes over. When the
 * old leader resumes, a write it had already decided on can reach the store before it learns that
 * it is no longer the leader (its `held.signal` aborts only once its event loop runs again).
 * The store refuses that write; the old leader steps down and becomes a candidate again.
 *
 * Run two or three candidates, each in its own terminal:
 *   REDIS_URL=redis://localhost:6379 npx tsx examples/leader-fencing.ts
 * Then pause the leader past its lease (WATCHDOG_TIMEOUT_MS, 10000 by default) in one of two ways:
 * - `kill -USR2 <pid>`: the leader stalls for PAUSE_MS (15000) between deciding on a write and
 *   sending it, the way a GC pause can land; when it resumes the store refuses that write.
 * - `kill -STOP <pid>`, wait 15 s, `kill -CONT <pid>`: a real freeze; depending on which timer
 *   runs first when it resumes, the store refuses its write, or its signal aborts before it writes.
 * Settings: LEADER_NAME (reports), CANDIDATE_ID (candidate-<pid>), WRITE_EVERY_MS (1000).
 */
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockClient, type FencedHeld } from 'rlock';

/**
 * The store's check, atomic in Redis: refuse a token below the largest accepted so far. An equal
 * token is the same leader writing again (no two acquisitions share a token).
 */
const FENCED_WRITE = `
local last = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) < last then return 0 end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1`;

/** A record that only the newest leader can write. In SQL: `UPDATE ... WHERE fence < $token`. */
export class FencedStore {
  constructor(
    private readonly redis: Redis,
    readonly key: string,
  ) {}

  /** Writes `value` unless a larger token was accepted before; false when refused. */
  async write(token: number, value: string): Promise<boolean> {
    return (await this.redis.eval(FENCED_WRITE, 1, this.key, String(token), value)) === 1;
  }

  async read(): Promise<{ token: number; value: string } | null> {
    const { token, value } = await this.redis.hgetall(this.key);
    return token === undefined || value === undefined ? null : { token: Number(token), value };
  }
}

export interface LeaderOptions {
  redisUrl: string;
  /** The election: the lock is `leader:<name>`, the store `store:<name>`. */
  name?: string;
  candidateId?: string;
  /** How often the leader writes, in ms. */
  writeEvery?: number;
  /** The lease the watchdog keeps renewing: how long a paused or crashed leader is waited for. */
  watchdogTimeout?: number;
  log?: (line: string) => void;
}

export interface Candidate {
  readonly store: FencedStore;
  /** The token this candidate leads with, or null while it does not lead. */
  leading(): number | null;
  /** Stalls the event loop for `ms` at the next write, between deciding on it and sending it. */
  stallNextWrite(ms: number): void;
  /** Leaves the election: a leader steps down and releases the lock at once. */
  stop(): Promise<void>;
}

export function start(options: LeaderOptions): Candidate {
  const {
    redisUrl,
    name = 'reports',
    candidateId = `candidate-${process.pid}`,
    writeEvery = 1_000,
    watchdogTimeout = 10_000,
  } = options;
  const log = (line: string): void => (options.log ?? console.log)(`[${candidateId}] ${line}`);

  const redis = new Redis(redisUrl);
  redis.on('error', (error: Error) => log(`redis: ${error.message}`));
  const client = new LockClient(redis, { watchdogTimeout });
  client.on('lockLost', ({ code }) => log(`lease lost (${code})`));
  const store = new FencedStore(redis, `store:${name}`);
  const leave = new AbortController();
  let token: number | null = null;
  let stall = 0;

  async function lead(held: FencedHeld): Promise<void> {
    token = held.token;
    log(`leading with token ${held.token}`);
    try {
      for (let n = 1; !held.signal.aborted; n += 1) {
        const value = `${candidateId} #${n}`;
        if (stall > 0) {
          log(`stalling ${stall} ms before writing ${value}`);
          // Blocks the whole process, timers and the watchdog included, as a long GC pause does.
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, stall);
          stall = 0;
        }
        if (!(await store.write(held.token, value))) {
          log(`write refused: token ${held.token} is stale, another leader wrote since; stepping down`);
          return;
        }
        log(`wrote ${value} with token ${held.token}`);
        await sleep(writeEvery, undefined, { signal: held.signal }).catch(() => undefined);
      }
      if (!leave.signal.aborted) log('no longer leader: the lease is gone; stepping down');
    } finally {
      token = null;
    }
  }

  const campaign = (async () => {
    while (!leave.signal.aborted) {
      log('candidate: waiting to lead');
      try {
        // Waits (no polling) until the lock is free, then leads until the lease is lost or we leave.
        await client.getFencedLock(`leader:${name}`).withLock(lead, { signal: leave.signal });
      } catch (error) {
        if (leave.signal.aborted) break;
        // After a lost lease the release finds the lock gone or taken: LockNotHeldError.
        log(`stepped down: ${error instanceof Error ? error.message : String(error)}`);
        await sleep(100);
      }
    }
  })();

  return {
    store,
    leading: () => token,
    stallNextWrite(ms) {
      stall = ms;
    },
    async stop() {
      leave.abort(new Error('leaving the election'));
      await campaign;
      await client.close();
      await redis.quit();
      log('stopped');
    },
  };
}

/** A candidate as a program: settings from the environment; SIGUSR2 stalls it; SIGTERM, SIGINT stop it. */
export function main(env: NodeJS.ProcessEnv = process.env): void {
  const number = (value: string | undefined, fallback: number): number =>
    value === undefined || value === '' ? fallback : Number(value);
  const candidate = start({
    redisUrl: env.REDIS_URL ?? 'redis://localhost:6379',
    name: env.LEADER_NAME || undefined,
    candidateId: env.CANDIDATE_ID || undefined,
    writeEvery: number(env.WRITE_EVERY_MS, 1_000),
    watchdogTimeout: number(env.WATCHDOG_TIMEOUT_MS, 10_000),
  });
  process.on('SIGUSR2', () => candidate.stallNextWrite(number(env.PAUSE_MS, 15_000)));
  const stop = (): void => {
    candidate.stop().catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

// Run when started as a program (tsx, node), not when imported.
if (basename(process.argv[1] ?? '').replace(/\.[cm]?[jt]s$/, '') === 'leader-fencing') {
  main();
}
