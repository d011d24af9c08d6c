import { ReplyError, type Store } from './store';

/**
 * The commands rlock and its scripts send, as Redis 7 answers them: the same replies, the same
 * errors for what the scripts could get wrong (a wrong type, a bad number, a bad option). Commands
 * nothing sends are left out on purpose: an unknown one fails loudly, as on a server that renamed it.
 */

/** A status reply (+OK): to Lua a table {ok=...}, to ioredis a plain string. */
export class Status {
  constructor(readonly text: string) {}
}

export type Reply = null | number | string | Status | Reply[];

/** What a command may do beyond the keyspace. */
export interface CommandContext {
  store: Store;
  /** Server time in microseconds (TIME; scripts read it for every deadline). */
  micros(): number;
  /** Publishes on a channel; answers how many subscribers got it. */
  publish(channel: string, message: string, sharded: boolean): number;
}

type Handler = (ctx: CommandContext, args: string[]) => Reply;

const syntax = (): ReplyError => new ReplyError('ERR syntax error');
const notInteger = (): ReplyError => new ReplyError('ERR value is not an integer or out of range');
const notFloat = (): ReplyError => new ReplyError('ERR value is not a valid float');

export function parseInteger(text: string | undefined): number {
  if (text === undefined || !/^-?(0|[1-9]\d*)$/.test(text)) throw notInteger();
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw notInteger();
  return n;
}

function parseScore(text: string): number {
  const lowered = text.toLowerCase();
  if (lowered === '+inf' || lowered === 'inf') return Infinity;
  if (lowered === '-inf') return -Infinity;
  const n = Number(text);
  if (text.trim() === '' || Number.isNaN(n)) throw notFloat();
  return n;
}

/** A score as Redis writes it: the shortest text that reads back the same double. */
export function formatScore(score: number): string {
  if (score === Infinity) return 'inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}

/** A ZRANGEBYSCORE bound: `(5` is exclusive. */
function parseBound(text: string): { value: number; exclusive: boolean } {
  const exclusive = text.startsWith('(');
  const value = parseScore(exclusive ? text.slice(1) : text);
  return { value, exclusive };
}

function inRange(score: number, min: { value: number; exclusive: boolean }, max: typeof min): boolean {
  const above = min.exclusive ? score > min.value : score >= min.value;
  const below = max.exclusive ? score < max.value : score <= max.value;
  return above && below;
}

export function sortedMembers(zset: Map<string, number>): Array<[string, number]> {
  return [...zset].sort(([ma, sa], [mb, sb]) => (sa !== sb ? sa - sb : ma < mb ? -1 : ma > mb ? 1 : 0));
}

function arity(args: string[], min: number, name: string): void {
  if (args.length < min) throw new ReplyError(`ERR wrong number of arguments for '${name}' command`);
}

function nowMs(ctx: CommandContext): number {
  return Math.floor(ctx.micros() / 1000);
}

function pttl(ctx: CommandContext, key: string): number {
  if (!ctx.store.has(key)) return -2;
  const at = ctx.store.expiresAt(key);
  return at === undefined ? -1 : Math.max(0, at - nowMs(ctx));
}

function incrBy(ctx: CommandContext, key: string, by: number): number {
  const current = ctx.store.read(key, 'string');
  const value = (current === undefined ? 0 : parseInteger(current)) + by;
  if (!Number.isSafeInteger(value)) throw new ReplyError('ERR increment or decrement would overflow');
  ctx.store.setString(key, String(value), undefined, true);
  return value;
}

function set(ctx: CommandContext, args: string[]): Reply {
  arity(args, 2, 'set');
  const [key, value] = args as [string, string];
  let nx = false;
  let xx = false;
  let keepTtl = false;
  let expiresAt: number | undefined;
  for (let i = 2; i < args.length; i += 1) {
    const option = (args[i] as string).toLowerCase();
    if (option === 'nx') nx = true;
    else if (option === 'xx') xx = true;
    else if (option === 'keepttl') keepTtl = true;
    else if (option === 'px' || option === 'ex' || option === 'pxat' || option === 'exat') {
      const amount = parseInteger(args[(i += 1)]);
      if (amount <= 0) throw new ReplyError("ERR invalid expire time in 'set' command");
      const ms = option.startsWith('e') ? amount * 1000 : amount;
      expiresAt = option.endsWith('at') ? ms : nowMs(ctx) + ms;
    } else throw syntax();
  }
  if ((nx && xx) || (keepTtl && expiresAt !== undefined)) throw syntax();
  const exists = ctx.store.has(key);
  if ((nx && exists) || (xx && !exists)) return null;
  ctx.store.setString(key, value, expiresAt, keepTtl);
  return new Status('OK');
}

function pexpire(ctx: CommandContext, args: string[]): Reply {
  arity(args, 2, 'pexpire');
  const key = args[0] as string;
  const ms = parseInteger(args[1]);
  if (args.length > 2) throw syntax();
  if (!ctx.store.has(key)) return 0;
  // A time that is already past deletes the key, as in Redis.
  if (ms <= 0) ctx.store.remove(key, 'deleted');
  else ctx.store.setExpiry(key, nowMs(ctx) + ms);
  return 1;
}

function zadd(ctx: CommandContext, args: string[]): Reply {
  arity(args, 3, 'zadd');
  const key = args[0] as string;
  let i = 1;
  const flags = new Set<string>();
  while (
    i < args.length &&
    ['nx', 'xx', 'gt', 'lt', 'ch', 'incr'].includes((args[i] as string).toLowerCase())
  ) {
    flags.add((args[i] as string).toLowerCase());
    i += 1;
  }
  const pairs = args.slice(i);
  if (pairs.length === 0 || pairs.length % 2 !== 0) throw syntax();
  if (flags.has('nx') && flags.has('xx')) {
    throw new ReplyError('ERR XX and NX options at the same time are not compatible');
  }
  if (flags.has('incr')) throw syntax();
  const scores = pairs.filter((_, n) => n % 2 === 0).map(parseScore);
  const existing = ctx.store.read(key, 'zset');
  if (!existing && flags.has('xx')) return 0;
  const zset = ctx.store.write(key, 'zset');
  let added = 0;
  let changed = 0;
  for (let n = 0; n < pairs.length; n += 2) {
    const member = pairs[n + 1] as string;
    const score = scores[n / 2] as number;
    const old = zset.get(member);
    if (old === undefined) {
      if (flags.has('xx')) continue;
      zset.set(member, score);
      added += 1;
      continue;
    }
    if (flags.has('nx')) continue;
    if ((flags.has('gt') && score <= old) || (flags.has('lt') && score >= old)) continue;
    if (old !== score) {
      zset.set(member, score);
      changed += 1;
    }
  }
  ctx.store.dropIfEmpty(key);
  return flags.has('ch') ? added + changed : added;
}

function withScores(entries: Array<[string, number]>, scores: boolean): Reply {
  return scores
    ? entries.flatMap(([member, score]) => [member, formatScore(score)])
    : entries.map(([m]) => m);
}

function zrange(ctx: CommandContext, args: string[]): Reply {
  arity(args, 3, 'zrange');
  const zset = ctx.store.read(args[0] as string, 'zset');
  let start = parseInteger(args[1]);
  let stop = parseInteger(args[2]);
  const rest = args.slice(3).map((arg) => arg.toLowerCase());
  if (rest.some((arg) => arg !== 'withscores')) throw syntax();
  if (!zset) return [];
  const sorted = sortedMembers(zset);
  const n = sorted.length;
  if (start < 0) start = Math.max(0, n + start);
  if (stop < 0) stop = n + stop;
  if (start > stop || start >= n) return [];
  return withScores(sorted.slice(start, Math.min(stop, n - 1) + 1), rest.length > 0);
}

function zrangebyscore(ctx: CommandContext, args: string[]): Reply {
  arity(args, 3, 'zrangebyscore');
  const zset = ctx.store.read(args[0] as string, 'zset');
  const min = parseBound(args[1] as string);
  const max = parseBound(args[2] as string);
  let scores = false;
  let offset = 0;
  let count = -1;
  for (let i = 3; i < args.length; i += 1) {
    const option = (args[i] as string).toLowerCase();
    if (option === 'withscores') scores = true;
    else if (option === 'limit') {
      offset = parseInteger(args[i + 1]);
      count = parseInteger(args[i + 2]);
      i += 2;
    } else throw syntax();
  }
  if (!zset) return [];
  let found = sortedMembers(zset).filter(([, score]) => inRange(score, min, max));
  if (offset < 0) return [];
  found = found.slice(offset, count < 0 ? undefined : offset + count);
  return withScores(found, scores);
}

function zremrangebyscore(ctx: CommandContext, args: string[]): Reply {
  arity(args, 3, 'zremrangebyscore');
  const key = args[0] as string;
  const zset = ctx.store.read(key, 'zset');
  const min = parseBound(args[1] as string);
  const max = parseBound(args[2] as string);
  if (!zset) return 0;
  let removed = 0;
  for (const [member, score] of [...zset]) {
    if (inRange(score, min, max)) {
      zset.delete(member);
      removed += 1;
    }
  }
  ctx.store.dropIfEmpty(key);
  return removed;
}

function lrem(ctx: CommandContext, args: string[]): Reply {
  arity(args, 3, 'lrem');
  const key = args[0] as string;
  const count = parseInteger(args[1]);
  const element = args[2] as string;
  const list = ctx.store.read(key, 'list');
  if (!list) return 0;
  let removed = 0;
  const limit = count === 0 ? Infinity : Math.abs(count);
  if (count >= 0) {
    for (let i = 0; i < list.length && removed < limit;) {
      if (list[i] === element) {
        list.splice(i, 1);
        removed += 1;
      } else i += 1;
    }
  } else {
    for (let i = list.length - 1; i >= 0 && removed < limit; i -= 1) {
      if (list[i] === element) {
        list.splice(i, 1);
        removed += 1;
      }
    }
  }
  ctx.store.dropIfEmpty(key);
  return removed;
}

function listIndex(length: number, index: number): number {
  return index < 0 ? length + index : index;
}

export const COMMANDS: Record<string, Handler> = {
  ping: (_ctx, args) => (args.length > 0 ? (args[0] as string) : new Status('PONG')),
  time: (ctx) => {
    const micros = ctx.micros();
    return [String(Math.floor(micros / 1e6)), String(micros % 1e6)];
  },
  exists: (ctx, args) => {
    arity(args, 1, 'exists');
    return args.filter((key) => ctx.store.has(key)).length;
  },
  del: (ctx, args) => {
    arity(args, 1, 'del');
    return args.filter((key) => ctx.store.remove(key, 'deleted')).length;
  },
  pttl: (ctx, args) => {
    arity(args, 1, 'pttl');
    return pttl(ctx, args[0] as string);
  },
  pexpire,
  get: (ctx, args) => {
    arity(args, 1, 'get');
    return ctx.store.read(args[0] as string, 'string') ?? null;
  },
  set,
  incr: (ctx, args) => incrBy(ctx, args[0] as string, 1),
  decr: (ctx, args) => incrBy(ctx, args[0] as string, -1),
  incrby: (ctx, args) => {
    arity(args, 2, 'incrby');
    return incrBy(ctx, args[0] as string, parseInteger(args[1]));
  },
  decrby: (ctx, args) => {
    arity(args, 2, 'decrby');
    return incrBy(ctx, args[0] as string, -parseInteger(args[1]));
  },
  hset: (ctx, args) => {
    if (args.length < 3 || args.length % 2 === 0) {
      throw new ReplyError("ERR wrong number of arguments for 'hset' command");
    }
    const hash = ctx.store.write(args[0] as string, 'hash');
    let added = 0;
    for (let i = 1; i < args.length; i += 2) {
      if (!hash.has(args[i] as string)) added += 1;
      hash.set(args[i] as string, args[i + 1] as string);
    }
    return added;
  },
  hget: (ctx, args) => {
    arity(args, 2, 'hget');
    return ctx.store.read(args[0] as string, 'hash')?.get(args[1] as string) ?? null;
  },
  hmget: (ctx, args) => {
    arity(args, 2, 'hmget');
    const hash = ctx.store.read(args[0] as string, 'hash');
    return args.slice(1).map((field) => hash?.get(field) ?? null);
  },
  hdel: (ctx, args) => {
    arity(args, 2, 'hdel');
    const key = args[0] as string;
    const hash = ctx.store.read(key, 'hash');
    if (!hash) return 0;
    const removed = args.slice(1).filter((field) => hash.delete(field)).length;
    ctx.store.dropIfEmpty(key);
    return removed;
  },
  hexists: (ctx, args) => {
    arity(args, 2, 'hexists');
    return ctx.store.read(args[0] as string, 'hash')?.has(args[1] as string) ? 1 : 0;
  },
  hgetall: (ctx, args) => {
    arity(args, 1, 'hgetall');
    return [...(ctx.store.read(args[0] as string, 'hash') ?? [])].flat();
  },
  hlen: (ctx, args) => ctx.store.read(args[0] as string, 'hash')?.size ?? 0,
  rpush: (ctx, args) => {
    arity(args, 2, 'rpush');
    const list = ctx.store.write(args[0] as string, 'list');
    list.push(...args.slice(1));
    return list.length;
  },
  lrange: (ctx, args) => {
    arity(args, 3, 'lrange');
    const list = ctx.store.read(args[0] as string, 'list') ?? [];
    const start = Math.max(0, listIndex(list.length, parseInteger(args[1])));
    const stop = Math.min(list.length - 1, listIndex(list.length, parseInteger(args[2])));
    return start > stop ? [] : list.slice(start, stop + 1);
  },
  lindex: (ctx, args) => {
    arity(args, 2, 'lindex');
    const list = ctx.store.read(args[0] as string, 'list') ?? [];
    return list[listIndex(list.length, parseInteger(args[1]))] ?? null;
  },
  lrem,
  llen: (ctx, args) => ctx.store.read(args[0] as string, 'list')?.length ?? 0,
  zadd,
  zrem: (ctx, args) => {
    arity(args, 2, 'zrem');
    const key = args[0] as string;
    const zset = ctx.store.read(key, 'zset');
    if (!zset) return 0;
    const removed = args.slice(1).filter((member) => zset.delete(member)).length;
    ctx.store.dropIfEmpty(key);
    return removed;
  },
  zscore: (ctx, args) => {
    arity(args, 2, 'zscore');
    const score = ctx.store.read(args[0] as string, 'zset')?.get(args[1] as string);
    return score === undefined ? null : formatScore(score);
  },
  zcard: (ctx, args) => ctx.store.read(args[0] as string, 'zset')?.size ?? 0,
  zrange,
  zrangebyscore,
  zremrangebyscore,
  publish: (ctx, args) => {
    arity(args, 2, 'publish');
    return ctx.publish(args[0] as string, args[1] as string, false);
  },
  spublish: (ctx, args) => {
    arity(args, 2, 'spublish');
    return ctx.publish(args[0] as string, args[1] as string, true);
  },
};

/** Runs one command (no scripts, no pub/sub subscriptions: see SimRedis). */
export function runCommand(ctx: CommandContext, name: string, args: string[]): Reply {
  const handler = COMMANDS[name.toLowerCase()];
  if (!handler) {
    const shown = args.map((arg) => `'${arg}'`).join(' ');
    throw new ReplyError(`ERR unknown command '${name}', with args beginning with: ${shown}`);
  }
  return handler(ctx, args);
}
