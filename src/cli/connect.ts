import Redis, { Cluster, type RedisOptions } from 'ioredis';
import { answeredWithin, isNoAnswer, NoAnswerError } from './no-answer';
import { UsageError } from './usage';

/**
 * The rlock command's connection, from a URL:
 *   redis://[user:password@]host[:port][/db]      a server, or any node of a cluster (detected)
 *   rediss://…                                    the same over TLS
 *   redis+sentinel://[:password@]host[:port][,host[:port]…]/<master name>[/db]
 *
 * The command asks once and reports: no retries, no offline queue, and the command's --timeout for
 * connecting and for every answer, so a wrong host, a refused connection or a server that stopped
 * answering (paused, overloaded) ends the command with one line instead of a wait.
 */
export type Connection = Redis | Cluster;

export interface Target {
  connection: Connection;
  /** What the URL named, for messages: the URL without its password. */
  where: string;
  kind: 'standalone' | 'sentinel' | 'cluster';
}

/** Options every connection of the command shares. */
function quickOptions(timeoutMs: number): RedisOptions {
  return {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    // ioredis waits up to 2 s (by default) for a server to close its side of a connection; a
    // paused server never does, and the command would outlive its answer by that long.
    disconnectTimeout: 0,
  };
}

interface Address {
  host: string;
  port: number;
}

function parseHosts(list: string, defaultPort: number, url: string): Address[] {
  return list.split(',').map((part) => {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(part);
    if (!match) throw new UsageError(`invalid --redis URL "${url}": cannot read the host "${part}"`);
    return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port: Number(match[2] ?? defaultPort) };
  });
}

/** The URL without its password, for messages. */
export function redact(url: string): string {
  return url.replace(/^([a-z+]+:\/\/)([^@/]*)@/i, (_all, scheme: string, auth: string) =>
    auth.includes(':') ? `${scheme}${auth.slice(0, auth.indexOf(':'))}:***@` : `${scheme}***@`,
  );
}

/** Reads a URL into ioredis options; throws UsageError for anything it cannot use. */
export function parseUrl(
  url: string,
): { kind: 'standalone'; options: RedisOptions } | { kind: 'sentinel'; options: RedisOptions } {
  const match = /^([a-z+]+):\/\/(?:([^@/]*)@)?([^/?#]*)(\/[^?#]*)?$/i.exec(url);
  if (!match) throw new UsageError(`invalid --redis URL "${redact(url)}": expected redis://host:port`);
  const [, rawScheme, auth, hosts, path] = match as unknown as [
    string,
    string,
    string | undefined,
    string,
    string | undefined,
  ];
  const scheme = rawScheme.toLowerCase();
  const [user, password] = auth
    ? auth.includes(':')
      ? [
          decodeURIComponent(auth.slice(0, auth.indexOf(':'))),
          decodeURIComponent(auth.slice(auth.indexOf(':') + 1)),
        ]
      : [undefined, decodeURIComponent(auth)]
    : [undefined, undefined];
  const segments = (path ?? '').split('/').filter((segment) => segment !== '');
  const readDb = (value: string | undefined): number | undefined => {
    if (value === undefined) return undefined;
    if (!/^\d+$/.test(value))
      throw new UsageError(`invalid --redis URL "${redact(url)}": "${value}" is not a database number`);
    return Number(value);
  };
  const credentials = { username: user || undefined, password };
  if (scheme === 'redis' || scheme === 'rediss') {
    if (hosts === '') throw new UsageError(`invalid --redis URL "${redact(url)}": no host`);
    const [address, ...more] = parseHosts(hosts, 6379, redact(url));
    if (more.length > 0 || segments.length > 1) {
      throw new UsageError(`invalid --redis URL "${redact(url)}": one host, then at most a database number`);
    }
    return {
      kind: 'standalone',
      options: {
        ...(address as Address),
        ...credentials,
        db: readDb(segments[0]),
        tls: scheme === 'rediss' ? {} : undefined,
      },
    };
  }
  if (scheme === 'redis+sentinel' || scheme === 'rediss+sentinel') {
    const [name, db] = segments;
    if (hosts === '' || name === undefined || segments.length > 2) {
      throw new UsageError(
        `invalid --redis URL "${redact(url)}": expected redis+sentinel://host:26379[,host:26379]/<master name>[/db]`,
      );
    }
    return {
      kind: 'sentinel',
      options: {
        sentinels: parseHosts(hosts, 26379, redact(url)),
        name: decodeURIComponent(name),
        ...credentials,
        sentinelPassword: password,
        // ioredis asks the sentinels again and again by default; the command asks each once.
        sentinelRetryStrategy: () => null,
        db: readDb(db),
        tls: scheme === 'rediss+sentinel' ? {} : undefined,
      },
    };
  }
  throw new UsageError(
    `invalid --redis URL "${redact(url)}": the scheme must be redis://, rediss:// or redis+sentinel://`,
  );
}

/** Why a connection failed, in one line. */
function reason(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, ' ').trim();
}

/** A server that accepted the socket but never answered is told apart from one that said no. */
function connectFailure(error: unknown, prefix: string, where: string, timeoutMs: number): Error {
  if (error instanceof NoAnswerError) return error;
  return isNoAnswer(error)
    ? new NoAnswerError(where, timeoutMs)
    : new ConnectError(`${prefix}: ${reason(error)}`);
}

/**
 * Connects as the URL says. A server that reports cluster mode is reached again as a Cluster (any
 * node's address will do), so every key is read where it lives.
 */
export async function connect(url: string, keyPrefix: string, timeoutMs: number): Promise<Target> {
  const parsed = parseUrl(url);
  const where = redact(url);
  const quick = quickOptions(timeoutMs);
  const first = new Redis({
    ...parsed.options,
    ...quick,
    keyPrefix: keyPrefix || undefined,
    sentinelCommandTimeout: timeoutMs,
  });
  // The connection's 'error' event says why (ECONNREFUSED, a DNS failure); connect() itself only
  // rejects with "Connection is closed".
  let cause: unknown;
  first.on('error', (error: unknown) => {
    cause ??= error;
  });
  try {
    const info = await answeredWithin(
      first.connect().then(() => first.info('cluster')),
      timeoutMs,
      where,
    );
    if (!/cluster_enabled:1/.test(info)) return { connection: first, where, kind: parsed.kind };
  } catch (error) {
    first.disconnect();
    throw connectFailure(cause ?? error, `cannot connect to ${where}`, where, timeoutMs);
  }
  first.disconnect();
  const { host, port, username, password, tls } = parsed.options;
  const cluster = new Cluster([{ host, port }], {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    keyPrefix: keyPrefix || undefined,
    slotsRefreshTimeout: timeoutMs,
    redisOptions: {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      disconnectTimeout: 0,
      username,
      password,
      tls,
    },
  });
  cluster.on('error', (error: unknown) => {
    cause ??= error;
  });
  try {
    await answeredWithin(cluster.connect(), timeoutMs, where);
  } catch (error) {
    cluster.disconnect();
    throw connectFailure(cause ?? error, `cannot connect to the cluster at ${where}`, where, timeoutMs);
  }
  return { connection: cluster, where, kind: 'cluster' };
}

/** Redis could not be reached or refused the command's login. */
export class ConnectError extends Error {}
