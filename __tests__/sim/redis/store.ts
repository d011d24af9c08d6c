/**
 * The simulated Redis' keyspace: the four types rlock's scripts use, each key with an optional
 * expiry in server ms. Expired keys are removed when next looked at, as Redis does lazily; a reader
 * cannot tell that from active expiry. Hashes keep insertion order (Redis' listpack encoding, which
 * every hash of a lock stays in), zsets order by score then member.
 */
export type Value =
  | { type: 'string'; value: string }
  | { type: 'hash'; value: Map<string, string> }
  | { type: 'list'; value: string[] }
  | { type: 'zset'; value: Map<string, number> };

export type ValueType = Value['type'];

/** What a key of each type holds. */
export interface ValueOf {
  string: string;
  hash: Map<string, string>;
  list: string[];
  zset: Map<string, number>;
}

interface Entry {
  data: Value;
  /** Server ms at which the key is gone; undefined: never. */
  expiresAt?: number;
}

/** How a key went away, for the checks that ask why a hold is gone. */
export type Removal = 'expired' | 'deleted' | 'flushed';

export class ReplyError extends Error {
  override readonly name = 'ReplyError';
}

export const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

export class Store {
  private readonly keys = new Map<string, Entry>();

  constructor(
    /** The server's clock, ms since the epoch. */
    private readonly now: () => number,
    /** Told of every key that goes away, and why. */
    private readonly onRemoved: (key: string, why: Removal, data: Value) => void = () => undefined,
  ) {}

  private live(key: string): Entry | undefined {
    const entry = this.keys.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.now()) {
      this.keys.delete(key);
      this.onRemoved(key, 'expired', entry.data);
      return undefined;
    }
    return entry;
  }

  /** Removes every key whose time is up (the checks read the keyspace as of now). */
  expireDue(): void {
    for (const key of [...this.keys.keys()]) this.live(key);
  }

  has(key: string): boolean {
    return this.live(key) !== undefined;
  }

  type(key: string): ValueType | undefined {
    return this.live(key)?.data.type;
  }

  /** The value at `key` when it is of `type`; undefined when absent; WRONGTYPE otherwise. */
  read<T extends ValueType>(key: string, type: T): ValueOf[T] | undefined {
    const entry = this.live(key);
    if (!entry) return undefined;
    if (entry.data.type !== type) throw new ReplyError(WRONGTYPE);
    return entry.data.value as ValueOf[T];
  }

  /** The value at `key` of `type`, made empty when absent (the caller writes into it). */
  write<T extends ValueType>(key: string, type: T): ValueOf[T] {
    const found = this.read(key, type);
    if (found !== undefined) return found;
    const data = emptyOf(type);
    this.keys.set(key, { data });
    return data.value as ValueOf[T];
  }

  /** The raw value at `key`, whatever its type (the checks read it). */
  peek(key: string): Value | undefined {
    return this.live(key)?.data;
  }

  /** Sets a string, dropping any expiry unless `keepTtl`. */
  setString(key: string, value: string, expiresAt?: number, keepTtl = false): void {
    const old = this.live(key);
    const keep = keepTtl ? old?.expiresAt : undefined;
    this.keys.set(key, { data: { type: 'string', value }, expiresAt: expiresAt ?? keep });
  }

  /** Deletes a collection left empty, as Redis never keeps an empty hash, list or zset. */
  dropIfEmpty(key: string): void {
    const entry = this.keys.get(key);
    if (!entry || entry.data.type === 'string') return;
    if (entry.data.value instanceof Map ? entry.data.value.size === 0 : entry.data.value.length === 0) {
      this.remove(key, 'deleted');
    }
  }

  remove(key: string, why: Removal = 'deleted'): boolean {
    const entry = this.live(key);
    if (!entry) return false;
    this.keys.delete(key);
    this.onRemoved(key, why, entry.data);
    return true;
  }

  expiresAt(key: string): number | undefined {
    return this.live(key)?.expiresAt;
  }

  setExpiry(key: string, at: number | undefined): void {
    const entry = this.live(key);
    if (entry) entry.expiresAt = at;
  }

  /** Every live key, for the checks and the agreement test. */
  allKeys(): string[] {
    this.expireDue();
    return [...this.keys.keys()];
  }

  flush(why: Removal = 'flushed'): void {
    for (const key of [...this.keys.keys()]) this.remove(key, why);
  }
}

function emptyOf(type: ValueType): Value {
  switch (type) {
    case 'string':
      return { type, value: '' };
    case 'hash':
      return { type, value: new Map() };
    case 'list':
      return { type, value: [] };
    case 'zset':
      return { type, value: new Map() };
  }
}
