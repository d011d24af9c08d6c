import type { Connection, Target } from './connect';
import { isCluster } from './state';

/**
 * `rlock doctor`: what a Redis deployment means for locks. Each finding is 'ok', 'warn' (locks
 * work, but something can cost a lock or its wake-ups) or 'info'.
 */
export interface Finding {
  level: 'ok' | 'warn' | 'info';
  topic: string;
  text: string;
}

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

/** The eviction policy, from CONFIG GET, or INFO where CONFIG is disabled (managed services). */
async function evictionPolicy(redis: Connection, memoryInfo: string): Promise<string | undefined> {
  // Where CONFIG is renamed or refused, INFO memory says it as well.
  return (await configValue(redis, 'maxmemory-policy')) || field(memoryInfo, 'maxmemory_policy');
}

/** A setting from CONFIG GET; undefined where CONFIG is renamed or refused (managed services). */
async function configValue(redis: Connection, name: string): Promise<string | undefined> {
  try {
    const [, value] = (await redis.config('GET', name)) as string[];
    return value;
  } catch {
    return undefined;
  }
}

/**
 * Whether a restart keeps the locks (docs/deployments.md advises `appendonly yes`). Without
 * persistence a restart frees every lock at once while their holders go on; with RDB snapshots
 * alone it brings back the locks of the last snapshot: the ones taken since are free, and ones
 * released since come back held until their lease ends.
 */
async function persistence(redis: Connection, persistenceInfo: string): Promise<Finding> {
  const topic = 'persistence';
  if (field(persistenceInfo, 'aof_enabled') === '1') {
    const fsync = await configValue(redis, 'appendfsync');
    const crash =
      fsync === 'always'
        ? 'every write is on disk before it is answered'
        : fsync === 'no'
          ? 'a machine crash can lose the locks of the last seconds (the OS flushes when it likes)'
          : 'a machine crash can lose the locks of the last second';
    const how = fsync ? ` (appendfsync ${fsync})` : '';
    return { level: 'ok', topic, text: `appendonly yes${how}: a restart keeps the locks; ${crash}` };
  }
  const advice = 'Turn on appendonly yes if a restart must not free locks (docs/deployments.md).';
  const save = await configValue(redis, 'save');
  const text =
    save === undefined
      ? 'appendonly no, and whether RDB snapshots are taken could not be read: a restart frees at ' +
        'least every lock taken since the last snapshot, while its holder carries on.'
      : save.trim() === ''
        ? 'off (appendonly no, no RDB snapshots): a restart frees every lock at once, while their ' +
          'holders carry on until their next renewal.'
        : `RDB snapshots only (save ${save}): a restart brings back the last snapshot; locks taken ` +
          'since are free while their holders carry on, and locks released since are held again ' +
          'until their lease ends.';
  return { level: 'warn', topic, text: `${text} ${advice}` };
}

async function roundTrip(redis: Connection): Promise<{ p50: number; max: number }> {
  const times: number[] = [];
  for (let i = 0; i < 20; i += 1) {
    const started = performance.now();
    await redis.ping();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: times[10] as number, max: times[19] as number };
}

export async function doctor(target: Target): Promise<Finding[]> {
  const redis = target.connection;
  const findings: Finding[] = [];
  const [serverInfo, memoryInfo, replicationInfo, persistenceInfo] = await Promise.all([
    redis.info('server'),
    redis.info('memory'),
    redis.info('replication'),
    redis.info('persistence'),
  ]);
  const version = field(serverInfo, 'redis_version') ?? 'unknown';
  const valkey = field(serverInfo, 'valkey_version');
  const major = Number(version.split('.')[0]);
  findings.push({
    level: major >= 6 ? 'ok' : 'warn',
    topic: 'version',
    text:
      `${valkey ? `Valkey ${valkey} (redis_version ${version})` : `Redis ${version}`}` +
      (major >= 6 ? '' : ': rlock needs Redis 6.2 or later'),
  });

  const masters = isCluster(redis) ? redis.nodes('master').length : undefined;
  findings.push({
    level: 'info',
    topic: 'deployment',
    text:
      target.kind === 'cluster'
        ? `cluster, ${masters} masters (every key of a lock lives in the slot of its name)`
        : target.kind === 'sentinel'
          ? `Sentinel; the master now has ${field(replicationInfo, 'connected_slaves') ?? '0'} replicas`
          : `${field(replicationInfo, 'role') ?? 'standalone'} server with ${field(replicationInfo, 'connected_slaves') ?? '0'} replicas`,
  });
  if (field(replicationInfo, 'role') === 'slave') {
    findings.push({
      level: 'warn',
      topic: 'role',
      text: 'this is a replica: locks are written on the master (connect to it, or through Sentinel)',
    });
  }

  const policy = await evictionPolicy(redis, memoryInfo);
  const maxmemory = Number(field(memoryInfo, 'maxmemory') ?? '0');
  if (policy === undefined) {
    findings.push({ level: 'warn', topic: 'eviction', text: 'the eviction policy could not be read' });
  } else if (policy === 'noeviction') {
    findings.push({
      level: 'ok',
      topic: 'eviction',
      text: 'maxmemory-policy noeviction: lock keys are never evicted',
    });
  } else if (maxmemory === 0) {
    findings.push({
      level: 'ok',
      topic: 'eviction',
      text: `maxmemory-policy ${policy}, but no maxmemory is set, so nothing is evicted (set noeviction before setting a limit)`,
    });
  } else {
    const which = policy.startsWith('volatile')
      ? 'evicts keys with a ttl, and every lock has one'
      : 'evicts any key, locks included';
    findings.push({
      level: 'warn',
      topic: 'eviction',
      text: `maxmemory-policy ${policy} ${which}: under memory pressure a held lock can vanish and two holders overlap. Use noeviction (writes then fail with OOM, which rlock reports).`,
    });
  }

  findings.push(await persistence(redis, persistenceInfo));

  findings.push(await pubSub(redis, target, major));

  const { p50, max } = await roundTrip(redis);
  findings.push({
    level: p50 > 50 ? 'warn' : 'info',
    topic: 'round trip',
    text:
      `PING p50 ${p50.toFixed(2)} ms, max ${max.toFixed(2)} ms over 20` +
      (p50 > 50 ? ': leases and commandTimeout should be well above this' : ''),
  });
  return findings;
}

/**
 * How waiters are woken here. A proxy or a managed service may have no pub/sub at all (its
 * commands renamed away or refused): every kind's waits fail at once then, except the spin lock's.
 */
async function pubSub(redis: Connection, target: Target, major: number): Promise<Finding> {
  const topic = 'pub/sub';
  const missing = await missingCommands(redis, ['publish', 'subscribe']);
  if (missing.length > 0) {
    return {
      level: 'warn',
      topic,
      text:
        `none: ${missing.map((command) => command.toUpperCase()).join(' and ')} not available on this ` +
        'server (renamed or disabled). Waits on every lock kind but getSpinLock fail at once; use ' +
        'getSpinLock here (docs/spin-lock.md).',
    };
  }
  const sharded = target.kind === 'cluster' && major >= 7;
  return {
    level: 'info',
    topic,
    text: sharded
      ? "sharded (SSUBSCRIBE/SPUBLISH on the lock's shard), what rlock's pubSub: 'auto' picks here"
      : target.kind === 'cluster'
        ? 'classic: this cluster has no sharded pub/sub (Redis 7+); every release is broadcast to every node'
        : 'classic (SUBSCRIBE/PUBLISH)',
  };
}

/** Which of `commands` the server does not know (COMMAND INFO answers nil for them). */
async function missingCommands(redis: Connection, commands: string[]): Promise<string[]> {
  const node = isCluster(redis) ? (redis.nodes('master')[0] ?? redis) : redis;
  try {
    const info = (await node.call('COMMAND', 'INFO', ...commands)) as unknown[];
    return commands.filter((_, i) => info[i] === null);
  } catch {
    // COMMAND itself refused (some managed services): nothing can be said.
    return [];
  }
}

export function describeFindings(findings: Finding[]): string {
  const mark = { ok: 'ok  ', warn: 'WARN', info: '    ' };
  return findings.map((f) => `${mark[f.level]}  ${f.topic.padEnd(12)}${f.text}`).join('\n');
}
