import { parseArgs } from 'node:util';

/** The command line was wrong: the message says how; the command exits with 2. */
export class UsageError extends Error {}

export const HELP = `rlock — look at and repair the locks rlock (and Redisson) keep in Redis

Usage:
  rlock inspect <name>          who holds the lock, its hold counts, ttl, the fair queue in order,
                                the fencing token, semaphore permits or a latch count, and the host
                                and process behind each rlock owner id
  rlock list [pattern]          the locks, queues and synchronizers whose names match (SCAN; never KEYS)
  rlock watch <name>            inspect, redrawn as it changes (Ctrl-C ends it)
  rlock force-unlock <name>     delete the lock whoever holds it and wake its waiters (asks first)
  rlock doctor                  what this Redis means for locks: eviction policy, version,
                                deployment, pub/sub kind, round trip

Options:
  --redis <url>        redis://[user:password@]host:port[/db], rediss://… (TLS),
                       redis+sentinel://host:26379[,host:26379]/<master name>[/db];
                       a cluster is found from any node's address.
                       Default: $REDIS_URL, else redis://127.0.0.1:6379
  --key-prefix <p>     the ioredis keyPrefix your services use, if any
  --json               print JSON instead of text
  --yes                force-unlock without asking
  --interval <ms>      how often watch looks again without a change (default 1000)
  --timeout <ms>       how long to wait for Redis to connect and to answer each command before
                       giving up (default 5000); watch rides out an outage and looks again
  --count <n>          list: stop after n names (default 1000)
  -h, --help           this text
  -v, --version        the version of rlock

Exit status: 0 done; 1 Redis could not be reached, did not answer in time, or refused;
2 a wrong command line; 3 force-unlock found nothing to unlock, or was not confirmed.`;

export interface CommandLine {
  command: 'inspect' | 'list' | 'watch' | 'force-unlock' | 'doctor' | 'help' | 'version';
  /** The lock name (inspect, watch, force-unlock) or the pattern (list). */
  argument?: string;
  redis: string;
  keyPrefix: string;
  json: boolean;
  yes: boolean;
  intervalMs: number;
  /** How long Redis has to connect and to answer each command (see connect.ts). */
  timeoutMs: number;
  count: number;
}

/** What --timeout is when not given: a healthy Redis answers in well under a second. */
export const DEFAULT_TIMEOUT_MS = 5_000;

const NEEDS_NAME = new Set(['inspect', 'watch', 'force-unlock']);

/**
 * Times end at a day: a timer of 2^31 ms or more would fire at once (Node's setTimeout), so a
 * larger number is refused rather than turned into no wait at all.
 */
const MAX_MS = 86_400_000;

function positiveInteger(
  value: string | undefined,
  option: string,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? 'above 0' : `from 1 to ${max}`;
    throw new UsageError(`--${option} must be a whole number ${range}; got "${value}"`);
  }
  return Number(value);
}

/** Reads argv (without node and the script); throws UsageError with a one-line message. */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv): CommandLine {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        redis: { type: 'string' },
        'key-prefix': { type: 'string' },
        json: { type: 'boolean' },
        yes: { type: 'boolean', short: 'y' },
        interval: { type: 'string' },
        timeout: { type: 'string' },
        count: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    // parseArgs says e.g. "Unknown option '--jsn'"; keep its first sentence.
    throw new UsageError(`${(error as Error).message.split('. ')[0]} (see rlock --help)`);
  }
  const { values, positionals } = parsed;
  const [command, argument, ...extra] = positionals;
  const base = {
    redis: values.redis ?? env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    keyPrefix: values['key-prefix'] ?? '',
    json: values.json === true,
    yes: values.yes === true,
    intervalMs: positiveInteger(values.interval, 'interval', 1_000, MAX_MS),
    timeoutMs: positiveInteger(values.timeout, 'timeout', DEFAULT_TIMEOUT_MS, MAX_MS),
    count: positiveInteger(values.count, 'count', 1_000),
  };
  if (values.help || command === 'help') return { ...base, command: 'help' };
  if (values.version) return { ...base, command: 'version' };
  if (command === undefined) throw new UsageError('a command is missing (see rlock --help)');
  if (!['inspect', 'list', 'watch', 'force-unlock', 'doctor'].includes(command)) {
    throw new UsageError(`unknown command "${command}" (see rlock --help)`);
  }
  if (NEEDS_NAME.has(command) && (argument === undefined || argument === '')) {
    throw new UsageError(`${command} needs a lock name: rlock ${command} <name>`);
  }
  if (command === 'doctor' && argument !== undefined) {
    throw new UsageError(`doctor takes no name; got "${argument}"`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected "${extra.join(' ')}" after "${argument}"`);
  return { ...base, command: command as CommandLine['command'], argument };
}
