import { LockClient, LUA_SCRIPTS } from './sim/library';
import { TeeClock, TeeConnection } from './sim/agreement/tee';
import { agreementWorkload } from './sim/agreement/workload';
import { toBytes } from './sim/redis/bytes';
import { sha1 } from './sim/redis/lua';
import { SimRedis } from './sim/redis/server';
import { runSeed } from './sim/run';
import { KINDS } from './sim/scenario';
import { startRedis, type RedisServer } from './helpers/redis-server';

/**
 * The simulated Redis agrees with redis-server on every script outcome the simulation uses: the
 * library's own command sequences (every kind the simulation runs on one server, waits, hand-offs,
 * leases that run out, SCRIPT FLUSH, copies of calls as re-sends make them) go to a real server
 * and, command by command, to a simulated one on the real clock; every reply and, after every
 * script, the whole keyspace (types, values, ttls) must be the same on both. And every script the
 * simulation runs in a seed of each kind ran here too.
 */
describe('the simulated Redis agrees with redis-server', () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server.stop();
  });

  test('on the replies and the keyspace of every command the library sends', async () => {
    const clock = new TeeClock();
    const sim = new SimRedis('sim', clock.micros);
    const tee = new TeeConnection(server.connect(), server.connect(), sim, clock);
    const client = new LockClient(tee as never, {
      watchdogTimeout: 1_000,
      commandTimeout: 2_000,
      fairLockWaitTimeout: 600,
    });
    const hasty = new LockClient(tee as never, { watchdogTimeout: 1_000, commandTimeout: 150 });
    await agreementWorkload(client, hasty, tee);
    await Promise.all([client.close(), hasty.close()]);
    expect(tee.differences.slice(0, 8)).toEqual([]);
    expect(tee.counts.commands).toBeGreaterThan(150);
    expect(tee.counts.states).toBeGreaterThan(500);

    // Every script the simulation ran in a seed of each kind (one server) ran through the tee.
    const byDigest = new Map(Object.entries(LUA_SCRIPTS).map(([file, text]) => [sha1(toBytes(text)), file]));
    const ranHere = new Set([...tee.scripts].map((digest) => byDigest.get(digest) ?? digest));
    const simulated = new Set<string>();
    for (const [index, kind] of KINDS.entries()) {
      if (kind === 'multi' || kind === 'red') continue;
      const result = await runSeed(index + 1, { kind });
      for (const digest of result.scripts) simulated.add(byDigest.get(digest) ?? digest);
    }
    expect([...simulated].filter((file) => !ranHere.has(file))).toEqual([]);
  }, 60_000);

  // The comparison can fail: a simulated server whose scripts write one mark differently disagrees.
  test('reports a simulated server that runs a script differently', async () => {
    const clock = new TeeClock();
    const sim = new SimRedis('sim', clock.micros);
    sim.scriptText = (text) => text.split("'a', -2)").join("'b', -2)");
    const tee = new TeeConnection(server.connect(), server.connect(), sim, clock);
    const client = new LockClient(tee as never);
    const lock = client.getLock('control');
    await lock.lock();
    await lock.unlock();
    await client.close();
    expect(tee.differences.map(({ what }) => what)).toContain('key control');
  });
});
