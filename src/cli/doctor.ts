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
  try {
    const [, policy] = (await redis.config('GET', 'maxmemory-policy')) as string[];
    if (policy) return policy;
  } catch {
    // CONFIG renamed or refused: INFO memory says it as well.
  }
  return field(memoryInfo, 'maxmemory_policy');
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
  const [serverInfo, memoryInfo, replicationInfo] = await Promise.all([
    redis.info('server'),
    redis.info('memory'),
    redis.info('replication'),
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

  const sharded = target.kind === 'cluster' && major >= 7;
  findings.push({
    level: 'info',
    topic: 'pub/sub',
    text: sharded
      ? "sharded (SSUBSCRIBE/SPUBLISH on the lock's shard), what rlock's pubSub: 'auto' picks here"
      : target.kind === 'cluster'
        ? 'classic: this cluster has no sharded pub/sub (Redis 7+); every release is broadcast to every node'
        : 'classic (SUBSCRIBE/PUBLISH)',
  });

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

export function describeFindings(findings: Finding[]): string {
  const mark = { ok: 'ok  ', warn: 'WARN', info: '    ' };
  return findings.map((f) => `${mark[f.level]}  ${f.topic.padEnd(11)}${f.text}`).join('\n');
}
