import type { LockLostEvent } from '../../src';
import { FENCED_WRITE } from '../helpers/fenced-store';
import { holderIds } from '../helpers/holders';
import { useRedis } from '../helpers/setup';
import { reportFault } from '../helpers/report';
import { sleep } from '../helpers/wait';
import { startWorker } from '../helpers/workers';

// Faults that hit the holder: it dies, or it stops running while its lease runs out.
describe('fault: the holder', () => {
  const redis = useRedis();

  test('killed with SIGKILL: the lock is free within its ttl, and no two holders overlap', async () => {
    // Invariant: after the kill, a waiter holds the lock within the dead holder's lease, alone.
    const rounds = 3;
    const delays: number[] = [];
    let mostHolders = 0;
    for (let round = 0; round < rounds; round += 1) {
      const holder = startWorker([String(redis.server().port), 'hold', 'f-kill'], {
        WATCHDOG_TIMEOUT: '1000',
      });
      expect(await holder.firstMessage).toBe('locked');
      const lock = redis.client().getLock('f-kill');
      expect(await lock.tryLock()).toBe(false);
      holder.child.kill('SIGKILL');
      const killedAt = performance.now();
      expect(await lock.tryLock(5_000)).toBe(true);
      delays.push(performance.now() - killedAt);
      mostHolders = Math.max(mostHolders, (await holderIds(redis.admin(), 'f-kill')).length);
      await lock.unlock();
    }
    reportFault('holder killed', { rounds, maxTakeoverMs: Math.max(...delays), leaseMs: 1_000, mostHolders });
    expect(mostHolders).toBe(1);
    expect(Math.max(...delays)).toBeLessThan(1_000 + 500);
  }, 30_000);

  test('paused with SIGSTOP past its lease: another takes over, the resumed holder is told and its write refused', async () => {
    // Invariant: a paused holder's lease ends; the next holder gets a larger token; once resumed,
    // the old holder's signal is aborted and a store that checks tokens refuses its write.
    const admin = redis.admin();
    const victim = startWorker([String(redis.server().port), 'fenced', 'f-pause'], {
      WATCHDOG_TIMEOUT: '1000',
    });
    const locked = await victim.firstMessage;
    expect(locked).toMatch(/^locked:\d+$/);
    const victimToken = Number(locked.split(':')[1]);
    victim.child.kill('SIGSTOP');
    try {
      const client = redis.client();
      const lost: LockLostEvent[] = [];
      client.on('lockLost', (event) => lost.push(event));
      const next = client.getFencedLock('f-pause');
      const started = performance.now();
      const token = await next.tryLockAndGetToken(5_000);
      expect(token).not.toBeNull();
      expect(token as number).toBeGreaterThan(victimToken);
      expect(performance.now() - started).toBeLessThan(1_000 + 500);
      expect(await admin.eval(FENCED_WRITE, 1, 'f-pause:store', String(token), 'from the new holder')).toBe(
        1,
      );
    } finally {
      victim.child.kill('SIGCONT');
    }
    await sleep(200); // let the resumed process run its timers
    victim.child.send('write');
    const outcome = await victim.nextMessage();
    reportFault('holder paused past its lease', { outcome });
    expect(outcome).toBe('wrote:0:aborted:true');
    expect(await admin.hget('f-pause:store', 'value')).toBe('from the new holder');
  }, 30_000);
});
