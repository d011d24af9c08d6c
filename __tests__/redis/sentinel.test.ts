import { LockClient, LockNotReplicatedError } from '../../src';
import { reportFault } from '../helpers/report';
import { startSentinelDeployment, type SentinelDeployment } from '../helpers/redis-sentinel';
import { eventually, sleep } from '../helpers/wait';

/**
 * Sentinel (one master, one replica, one Sentinel) through ioredis' sentinel options, and the
 * waitForReplicas option that makes "no replica has it" an error instead of a silent risk.
 */
describe('Sentinel and waitForReplicas', () => {
  let deployment: SentinelDeployment;
  const clients: LockClient[] = [];
  const client = (options: ConstructorParameters<typeof LockClient>[1] = {}): LockClient => {
    const made = new LockClient(deployment.connect(), options);
    clients.push(made);
    return made;
  };

  beforeEach(async () => {
    deployment = await startSentinelDeployment();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((made) => made.close()));
    await deployment.stop();
  });

  test('waitForReplicas: an acquisition no replica acknowledged is an error, and is given back', async () => {
    // A second for a healthy replica's acknowledgement: on a busy machine 300 ms can be too short.
    const locks = client({ waitForReplicas: { replicas: 1, timeout: 1_000 } });
    const lock = locks.getLock('synced');
    await lock.lock();
    expect(await deployment.replica.connect().exists('synced')).toBe(1);
    await lock.unlock();

    deployment.replica.freeze(); // it acknowledges nothing while frozen
    try {
      const failed = await lock.tryLock(0, 10_000).catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(LockNotReplicatedError);
      expect(failed).toMatchObject({
        code: 'ERR_LOCK_NOT_REPLICATED',
        operation: 'acquire',
        acknowledged: 0,
      });
      expect(await deployment.master.connect().exists('synced')).toBe(0);
      // Without the option, the same acquisition just happens.
      expect(await client().getLock('synced').tryLock(0, 10_000)).toBe(true);
    } finally {
      deployment.replica.thaw();
    }
  });

  test('waitForReplicas: a release no replica acknowledged is an error, though the lock is free', async () => {
    const lock = client({ waitForReplicas: { replicas: 1, timeout: 300 } }).getLock('released');
    await lock.lock();
    deployment.replica.freeze();
    try {
      await expect(lock.unlock()).rejects.toMatchObject({
        code: 'ERR_LOCK_NOT_REPLICATED',
        operation: 'release',
      });
      expect(await deployment.master.connect().exists('released')).toBe(0);
    } finally {
      deployment.replica.thaw();
    }
  });

  test('across a failover, a replicated lock stays held and its waiter gets it on release', async () => {
    const holder = client({ watchdogTimeout: 10_000, waitForReplicas: { replicas: 1 } });
    const waiter = client();
    const lock = holder.getLock('failover');
    const fair = holder.getFairLock('failover-fair');
    await lock.lock(); // acknowledged by the replica, or this would throw
    await fair.lock();
    const waits = [
      waiter.getLock('failover').tryLock(20_000),
      waiter.getFairLock('failover-fair').tryLock(20_000),
    ];
    await sleep(200);

    await deployment.master.stop();
    const killedAt = performance.now();
    await eventually(
      'the Sentinel promotes the replica',
      async () => (await deployment.currentMasterPort()) === deployment.replica.port,
      15_000,
    );
    const promotedAt = performance.now();
    await eventually('the holder reaches the new master', () => lock.isHeldByCurrentTask(), 10_000);
    const reachedAt = performance.now();
    expect(await fair.isHeldByCurrentTask()).toBe(true);

    // The new master has no replica: the release happens, and says it is not replicated.
    const releasedAt = performance.now();
    const releases = [lock.unlock(), fair.unlock()];
    expect(await Promise.all(waits)).toEqual([true, true]);
    const handedOnAt = performance.now();
    for (const release of releases) await expect(release).rejects.toBeInstanceOf(LockNotReplicatedError);
    reportFault('sentinel master killed', {
      promotedMs: promotedAt - killedAt,
      holderReachedNewMasterMs: reachedAt - killedAt,
      handOffAfterFailoverMs: handedOnAt - releasedAt,
    });
  });
});
