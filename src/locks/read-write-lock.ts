import { readTimeoutPrefix, readWriteLockKeys, type ReadWriteLockKeys } from '../protocol/keys';
import {
  acquireReadLock,
  acquireWriteLock,
  forceReleaseReadWriteLock,
  leaveWriterQueue,
  releaseReadLock,
  releaseWriteLock,
  setReadLease,
  withdrawReadLock,
  withdrawWriteLock,
  type PublishCommand,
  type ReleaseWhich,
} from '../protocol/scripts';
import { scriptMode, type AttemptKind, type StepLimits, type WakeSource } from '../waiting/acquire-or-wait';
import { BaseLock, newHandleOwner, type HandleOwner } from './base/base-lock';
import type { LockContext } from '../context';
import type { RLock } from './types';

/** Options of getReadWriteLock. */
export interface ReadWriteLockOptions {
  /**
   * Readers queue behind a waiting writer, so that a stream of overlapping readers cannot starve
   * writers. A property of the name, kept in Redis while the name is in use (its hash or a waiting
   * writer) and never longer: once set by any rlock client it holds for every rlock client of the
   * name meanwhile (Redisson clients ignore it). Default: reader preference, as Redisson.
   */
  writerPreference?: boolean;
}

/** Redisson's RReadWriteLock: many readers or one writer, each half a full RLock. */
export interface RReadWriteLock {
  readonly name: string;
  /** The read lock: shared by any number of owners while nobody (else) writes. */
  readLock(): RLock;
  /** The write lock: one owner, while nobody else reads or writes. */
  writeLock(): RLock;
}

/** The suffix of a writer's field in the hash (Redisson's `<owner id>:write`). */
const WRITE_SUFFIX = ':write';

/**
 * One half of a read-write lock. Both halves keep their holds in the one hash at the name (Redisson's
 * layout) and wait on its channel; they differ in their scripts and in the field they write.
 */
abstract class ReadWriteHalf extends BaseLock {
  protected readonly wakeSourceFirst = false;
  protected readonly keys: ReadWriteLockKeys;

  /** `writerPreference`: this handle asks for it (see ReadWriteLockOptions); close() reopens without. */
  constructor(
    context: LockContext,
    name: unknown,
    owner?: HandleOwner,
    protected readonly writerPreference = false,
  ) {
    super(context, name, owner);
    this.keys = readWriteLockKeys(this.name, this.slot);
  }

  /** Both halves of one owner share one gate: a write and a read of sibling branches are kept apart. */
  protected override gateOwner(owner: string): string {
    return owner.endsWith(WRITE_SUFFIX) ? owner.slice(0, -WRITE_SUFFIX.length) : owner;
  }

  protected async openWakeSource(_owner: string, limits: StepLimits): Promise<WakeSource> {
    return (await this.context.subscriber(this.name, limits)).subscribe(this.keys.channel, {
      ...limits,
      lock: this.name,
    });
  }

  /** The hash's fields, for isLocked (Redisson's meaning differs per half). */
  protected async fields(): Promise<Record<string, string>> {
    this.throwIfClosed('closed', 'isLocked');
    return this.call('isLocked', () => this.context.redis.hgetall(this.keys.lock));
  }

  /** Redisson's forceUnlock: deletes the lock only in this half's mode; wakes every waiter. */
  override async forceUnlock(): Promise<boolean> {
    this.throwIfClosed('closed', 'forceUnlock');
    if (!(await this.call('forceUnlock', () => this.forceRelease()))) return false;
    for (const entry of this.context.book.holdersOf(this.name)) {
      this.context.book.lose(entry, 'force-unlocked', 'forceUnlock() deleted it');
    }
    return true;
  }

  /** Renewed with the hold, so that the name's preference lives as long as the name is in use. */
  protected override preferenceOf(): string {
    return this.keys.preference;
  }

  protected async forceRelease(): Promise<boolean> {
    const { lock, channel, writers, preference } = this.keys;
    const keys: [string, string, string, string] = [lock, channel, writers, preference];
    const args: ['read' | 'write', PublishCommand] = [this.mode, await this.context.publishCommand()];
    return (await forceReleaseReadWriteLock(this.context.redis, keys, args)) === 1;
  }

  protected abstract readonly mode: 'read' | 'write';
}

/** The read half: Redisson's RedissonReadLock. */
class ReadLock extends ReadWriteHalf {
  protected readonly mode = 'read';
  readonly kind = 'read';

  protected attempt(owner: string, leaseMs: number, latch: string): Promise<number | null> {
    const { lock, writers, preference } = this.keys;
    return acquireReadLock(
      this.context.redis,
      [lock, latch, readTimeoutPrefix(this.keys, owner), writers, preference],
      [leaseMs, owner, owner + WRITE_SUFFIX, this.markOf(latch)],
    );
  }

  protected async release(
    owner: string,
    latch: string,
    latchMs: number,
    which: ReleaseWhich,
  ): Promise<0 | 1 | null> {
    const { lock, channel, timeoutBase, writers, preference } = this.keys;
    return releaseReadLock(
      this.context.redis,
      [lock, channel, latch, readTimeoutPrefix(this.keys, owner), timeoutBase, writers, preference],
      [owner, latchMs, await this.context.publishCommand(), which, this.markOf(latch)],
    );
  }

  protected async withdraw(owner: string, latch: string, latchMs: number): Promise<unknown> {
    const { lock, channel, timeoutBase, writers, preference } = this.keys;
    return withdrawReadLock(
      this.context.redis,
      [lock, channel, latch, readTimeoutPrefix(this.keys, owner), timeoutBase, writers, preference],
      [owner, latchMs, await this.context.publishCommand(), this.markOf(latch)],
    );
  }

  /** A group lock's lease for this owner's read holds: other readers keep theirs. */
  protected override setLease(owner: string, leaseTime: number): Promise<number> {
    const { lock, timeoutBase } = this.keys;
    return setReadLease(
      this.context.redis,
      [lock, readTimeoutPrefix(this.keys, owner), timeoutBase],
      [leaseTime, owner],
    );
  }

  protected override readTimeoutsOf(owner: string): string {
    return readTimeoutPrefix(this.keys, owner);
  }

  /** Redisson's meaning: somebody reads (a read-mode lock, or a writer that also reads). */
  override async isLocked(): Promise<boolean> {
    const fields = await this.fields();
    if (fields.mode === 'read') return true;
    if (fields.mode !== 'write') return false;
    return Object.entries(fields).some(
      ([field, count]) => field !== 'mode' && !field.endsWith(WRITE_SUFFIX) && /^\d+$/.test(count),
    );
  }
}

/** The write half: Redisson's RedissonWriteLock; its field in the hash is `<owner id>:write`. */
class WriteLock extends ReadWriteHalf {
  protected readonly mode = 'write';
  readonly kind = 'write';

  protected override currentOwner(): string {
    return super.currentOwner() + WRITE_SUFFIX;
  }

  protected attempt(
    owner: string,
    leaseMs: number,
    latch: string,
    kind: AttemptKind,
  ): Promise<number | null> {
    const { lock, writers, preference } = this.keys;
    return acquireWriteLock(
      this.context.redis,
      [lock, latch, writers, preference],
      [
        leaseMs,
        owner,
        scriptMode(kind),
        this.context.watchdogTimeout,
        this.writerPreference ? '1' : '',
        this.markOf(latch),
      ],
    );
  }

  protected async release(
    owner: string,
    latch: string,
    latchMs: number,
    which: ReleaseWhich,
  ): Promise<0 | 1 | null> {
    const { lock, channel, timeoutBase, writers, preference } = this.keys;
    return releaseWriteLock(
      this.context.redis,
      [lock, channel, latch, timeoutBase, writers, preference],
      [owner, latchMs, await this.context.publishCommand(), which, this.markOf(latch)],
    );
  }

  protected async withdraw(owner: string, latch: string, latchMs: number): Promise<unknown> {
    const { lock, channel, timeoutBase, writers, preference } = this.keys;
    return withdrawWriteLock(
      this.context.redis,
      [lock, channel, latch, timeoutBase, writers, preference],
      [owner, latchMs, await this.context.publishCommand(), this.markOf(latch)],
    );
  }

  /** A writer that gives up its wait leaves its place (writerPreference), and readers behind it wake. */
  protected override giveUp(owner: string, limits: StepLimits): Promise<unknown> {
    const { writers, channel, lock, preference } = this.keys;
    return this.call(
      'giveUp',
      async () =>
        leaveWriterQueue(
          this.context.redis,
          [writers, channel, lock, preference],
          [owner, await this.context.publishCommand()],
        ),
      limits,
    );
  }

  /** Redisson's meaning: somebody writes. */
  override async isLocked(): Promise<boolean> {
    return (await this.fields()).mode === 'write';
  }
}

/**
 * A read-write lock (Redisson getReadWriteLock). Outside a task this object owns both halves, so
 * that a writer can take the read lock and keep it after releasing the write lock (a downgrade);
 * inside a task the task owns them.
 */
export class ReadWriteLock implements RReadWriteLock {
  readonly name: string;
  private readonly read: ReadLock;
  private readonly write: WriteLock;

  constructor(context: LockContext, name: unknown, options: ReadWriteLockOptions = {}) {
    const owner = newHandleOwner();
    this.read = new ReadLock(context, name, owner);
    this.name = this.read.name;
    this.write = new WriteLock(context, name, owner, options.writerPreference === true);
  }

  readLock(): RLock {
    return this.read;
  }

  writeLock(): RLock {
    return this.write;
  }
}
