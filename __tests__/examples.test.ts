import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { start as startOrders } from '../examples/http-orders';
import { start as startJob, type JobRun } from '../examples/job-singleton';
import { FencedStore, start as startCandidate } from '../examples/leader-fencing';
import { checkSnippets } from '../scripts/snippets';
import { useRedis } from './helpers/setup';
import { eventually, sleep } from './helpers/wait';

/**
 * The programs in examples/ do what their header comments say, on a real Redis: in this process
 * through their start() functions, and as programs (run by tsx, as a user runs them) where signals,
 * crashes and pauses are the point.
 */

const ROOT = resolve(__dirname, '..');

interface Program {
  child: ChildProcess;
  /** Its stdout lines so far. */
  lines: string[];
  /** The first line from index `from` on that matches, once there is one. */
  waitFor(pattern: RegExp, options?: { from?: number; timeout?: number }): Promise<RegExpExecArray>;
  /** Its exit code (or the signal that ended it). */
  exited: Promise<number | string | null>;
}

const programs: Program[] = [];

/** Runs examples/<file> as its own process, the way `npx tsx examples/<file>` does. */
function runExample(file: string, env: Record<string, string>): Program {
  const child = spawn(process.execPath, ['--import', 'tsx', join('examples', file)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | string | null>((resolveExit) =>
    child.once('exit', (code, signal) => resolveExit(code ?? signal)),
  );
  const program: Program = {
    child,
    lines,
    exited,
    async waitFor(pattern, { from = 0, timeout = 15_000 } = {}) {
      const deadline = Date.now() + timeout;
      for (;;) {
        for (const line of lines.slice(from)) {
          const match = pattern.exec(line);
          if (match) return match;
        }
        if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) {
          throw new Error(
            `${file}: no line matching ${pattern}\nstdout:\n${lines.join('\n')}\nstderr:\n${stderr}`,
          );
        }
        await sleep(20);
      }
    },
  };
  programs.push(program);
  return program;
}

afterEach(() => {
  for (const { child } of programs.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

describe('examples', () => {
  const redis = useRedis();
  const redisUrl = (): string => `redis://127.0.0.1:${redis.port()}`;

  describe('http-orders', () => {
    test('pays a free order, answers 409 for an order held elsewhere, and charges once for two requests', async () => {
      const log: string[] = [];
      const service = await startOrders({
        redisUrl: redisUrl(),
        port: 0,
        host: '127.0.0.1',
        waitTime: 1_000,
        workTime: 100,
        log: (line) => log.push(line),
      });
      try {
        const pay = async (
          id: string,
        ): Promise<{ status: number; body: unknown; retryAfter: string | null }> => {
          const response = await fetch(`${service.url}/orders/${id}/pay`, { method: 'POST' });
          return {
            status: response.status,
            body: await response.json(),
            retryAfter: response.headers.get('retry-after'),
          };
        };

        expect(await pay('1')).toMatchObject({
          status: 200,
          body: { id: '1', status: 'paid', charged: true },
        });

        // Another process (here: another client) holds order 2 longer than the request waits.
        const elsewhere = redis.client().getLock('order:2');
        await elsewhere.lock();
        expect(await pay('2')).toMatchObject({ status: 409, retryAfter: '1' });
        await elsewhere.unlock();
        expect(await pay('2')).toMatchObject({ status: 200, body: { charged: true } });

        // Two requests at once for one order: the second waits for the first and finds it paid.
        const both = await Promise.all([pay('3'), pay('3')]);
        expect(both.map(({ status }) => status)).toEqual([200, 200]);
        expect(both.map(({ body }) => (body as { charged: boolean }).charged).sort()).toEqual([false, true]);
        const order = await (await fetch(`${service.url}/orders/3`)).json();
        expect(order).toMatchObject({ id: '3', status: 'paid' });
      } finally {
        await service.shutdown();
      }
      expect(await redis.admin().exists('order:1', 'order:2', 'order:3')).toBe(0);
      expect(log.filter((line) => line.includes('paying'))).toHaveLength(3);
    }, 30_000);

    test('on SIGTERM it stops accepting, finishes the request in flight, releases its locks and exits 0 by itself', async () => {
      const service = runExample('http-orders.ts', {
        REDIS_URL: redisUrl(),
        PORT: '0',
        HOST: '127.0.0.1',
        ORDER_WORK_MS: '1500',
      });
      const [, url] = await service.waitFor(/^listening on (http:\S+)$/, { timeout: 20_000 });
      const inFlight = fetch(`${url}/orders/9/pay`, { method: 'POST' });
      await service.waitFor(/^order 9: paying$/);
      expect(await redis.admin().exists('order:9')).toBe(1);

      service.child.kill('SIGTERM');
      await service.waitFor(/^SIGTERM: stopping$/);
      await expect(fetch(`${url}/orders/10/pay`, { method: 'POST' })).rejects.toThrow(); // not accepted

      const response = await inFlight;
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ id: '9', status: 'paid', charged: true });
      expect(await service.exited).toBe(0);
      expect(service.lines).toContain('shut down');
      expect(await redis.admin().exists('order:9', 'order:10')).toBe(0);
      expect(await redis.admin().hget('orders:9', 'status')).toBe('paid');
    }, 40_000);
  });

  describe('job-singleton', () => {
    test('each round runs on one of three workers, never on two at once', async () => {
      let inside = 0;
      let most = 0;
      const rounds: number[] = [];
      const log: string[] = [];
      const work = async ({ round, signal }: JobRun): Promise<void> => {
        inside += 1;
        most = Math.max(most, inside);
        rounds.push(round);
        try {
          await sleep(150);
          signal.throwIfAborted();
        } finally {
          inside -= 1;
        }
      };
      const workers = ['w1', 'w2', 'w3'].map((workerId) =>
        startJob({
          redisUrl: redisUrl(),
          name: 'three',
          interval: 100,
          watchdogTimeout: 1_000,
          workerId,
          work,
          log: (line) => log.push(line),
        }),
      );
      try {
        await eventually('six rounds run', () => rounds.length >= 6, 15_000);
      } finally {
        await Promise.all(workers.map((worker) => worker.stop()));
      }
      expect(most).toBe(1);
      expect(new Set(rounds).size).toBe(rounds.length); // no round ran twice
      expect(log.some((line) => line.endsWith('running on another worker; skipped'))).toBe(true);
      expect(await redis.admin().exists('job:three')).toBe(0);
    }, 30_000);

    test('a lost lease aborts the held signal and the job stops at its next step', async () => {
      const log: string[] = [];
      let steps = 0;
      let stoppedEarly = false;
      const worker = startJob({
        redisUrl: redisUrl(),
        name: 'lost',
        interval: 100,
        watchdogTimeout: 1_000,
        workerId: 'w',
        log: (line) => log.push(line),
        work: async ({ signal }) => {
          try {
            for (; steps < 100; steps += 1) {
              signal.throwIfAborted();
              await sleep(50);
            }
          } catch (error) {
            stoppedEarly = true;
            throw error;
          }
        },
      });
      try {
        await eventually('the job runs', () => steps > 2);
        await redis.admin().del('job:lost'); // the lease is gone: the next renewal is refused
        await eventually('the job stopped', () => stoppedEarly, 5_000);
        expect(steps).toBeLessThan(100);
        expect(log).toContain('[w] lost job:lost (renewal-refused)');
        await eventually('the round reported', () =>
          log.some((line) => /stopped, the lock was lost \(renewal-refused\)$/.test(line)),
        );
      } finally {
        await worker.stop();
      }
    }, 30_000);

    test('a worker killed mid-job: the next round runs on another worker once its lease ends', async () => {
      const env = {
        REDIS_URL: redisUrl(),
        JOB_NAME: 'crash',
        JOB_INTERVAL_MS: '300',
        JOB_STEPS: '200',
        JOB_STEP_MS: '100',
        WATCHDOG_TIMEOUT_MS: '1000',
      };
      const workers = [
        runExample('job-singleton.ts', { ...env, WORKER_ID: 'a' }),
        runExample('job-singleton.ts', { ...env, WORKER_ID: 'b' }),
      ];
      await Promise.all(workers.map((worker) => worker.waitFor(/waiting for rounds/, { timeout: 20_000 })));
      const started = await Promise.any(
        workers.map(async (worker) => ({ worker, match: await worker.waitFor(/round (\d+): running$/) })),
      );
      const [killed, survivor] = started.worker === workers[0] ? workers : [...workers].reverse();
      if (!killed || !survivor) throw new Error('two workers expected');
      const from = survivor.lines.length;
      killed.child.kill('SIGKILL');
      const killedAt = Date.now();
      expect(await killed.exited).toBe('SIGKILL');

      const [, takenOver] = await survivor.waitFor(/round (\d+): running$/, { from, timeout: 10_000 });
      // Within the dead worker's lease (1 s) and one round (0.3 s), with slack for a loaded machine.
      expect(Date.now() - killedAt).toBeLessThan(4_000);
      expect(Number(takenOver)).toBeGreaterThan(Number(started.match[1]));

      survivor.child.kill('SIGTERM');
      expect(await survivor.exited).toBe(0);
      expect(survivor.lines).toContain(`[${survivor === workers[0] ? 'a' : 'b'}] stopped`);
      expect(await redis.admin().exists('job:crash')).toBe(0); // released at shutdown, not left to expire
    }, 60_000);
  });

  describe('leader-fencing', () => {
    test('the store refuses a smaller token; the next leader writes with a larger one', async () => {
      const log: string[] = [];
      const options = { redisUrl: redisUrl(), name: 'inproc', writeEvery: 50, watchdogTimeout: 1_000 };
      const first = startCandidate({ ...options, candidateId: 'one', log: (line) => log.push(line) });
      await eventually('one leads', () => first.leading() !== null);
      const firstToken = first.leading() as number;
      const second = startCandidate({ ...options, candidateId: 'two', log: (line) => log.push(line) });
      try {
        await eventually('one wrote', async () => (await first.store.read())?.token === firstToken);
        await first.stop(); // steps down: the lock is released at once
        await eventually('two leads', () => second.leading() !== null, 3_000);
        const secondToken = second.leading() as number;
        expect(secondToken).toBeGreaterThan(firstToken);
        await eventually('two wrote', async () => (await second.store.read())?.token === secondToken);
        expect(await second.store.write(firstToken, 'stale')).toBe(false);
        expect(await second.store.read()).toMatchObject({
          token: secondToken,
          value: expect.stringMatching(/^two #/),
        });
      } finally {
        await second.stop();
      }
      const store = new FencedStore(redis.connect(), 'store:direct');
      expect(await store.write(10, 'a')).toBe(true);
      expect(await store.write(10, 'b')).toBe(true); // the same leader again
      expect(await store.write(9, 'c')).toBe(false);
      expect(await store.read()).toEqual({ token: 10, value: 'b' });
    }, 30_000);

    test('a leader that stalls past its lease: another leads, and the stale write is refused', async () => {
      const env = {
        REDIS_URL: redisUrl(),
        LEADER_NAME: 'paused',
        WRITE_EVERY_MS: '200',
        WATCHDOG_TIMEOUT_MS: '1000',
        PAUSE_MS: '4000',
      };
      const a = runExample('leader-fencing.ts', { ...env, CANDIDATE_ID: 'a' });
      const [, tokenA] = await a.waitFor(/^\[a\] leading with token (\d+)$/, { timeout: 20_000 });
      const b = runExample('leader-fencing.ts', { ...env, CANDIDATE_ID: 'b' });
      await b.waitFor(/^\[b\] candidate: waiting to lead$/, { timeout: 20_000 });
      await sleep(300);

      a.child.kill('SIGUSR2'); // a stalls 4 s at its next write, with a 1 s lease
      await a.waitFor(/^\[a\] stalling 4000 ms/);
      const [, tokenB] = await b.waitFor(/^\[b\] leading with token (\d+)$/, { timeout: 10_000 });
      expect(Number(tokenB)).toBeGreaterThan(Number(tokenA));
      await b.waitFor(new RegExp(`^\\[b\\] wrote b #1 with token ${tokenB}$`));
      await a.waitFor(new RegExp(`^\\[a\\] write refused: token ${tokenA} is stale`), { timeout: 10_000 });
      const refusedAt = a.lines.findIndex((line) => line.includes('write refused'));
      await a.waitFor(/^\[a\] candidate: waiting to lead$/, { from: refusedAt }); // a candidate again

      const record = await redis.admin().hgetall('store:paused');
      expect(record.token).toBe(tokenB);
      expect(record.value).toMatch(/^b #/);

      a.child.kill('SIGTERM');
      b.child.kill('SIGTERM');
      expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
      expect(await redis.admin().exists('leader:paused')).toBe(0);
    }, 60_000);
  });

  test('each example compiles as a strict ES module of an app that installed rlock', () => {
    const files = readdirSync(join(ROOT, 'examples')).filter((file) => file.endsWith('.ts'));
    expect(files.sort()).toEqual(['http-orders.ts', 'job-singleton.ts', 'leader-fencing.ts']);
    const snippets = files.map((file) => ({
      file: `examples/${file}`,
      line: 1,
      heading: file,
      code: readFileSync(join(ROOT, 'examples', file), 'utf8'),
    }));
    for (const { code } of snippets) expect(code).toMatch(/from 'rlock';$/m);
    expect(checkSnippets(snippets)).toEqual([]);
  }, 60_000);
});
