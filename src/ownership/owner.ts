import { AsyncLocalStorage } from 'node:async_hooks';
import { isHoldMark, RW_MODE_FIELD } from '../protocol/keys';

/**
 * Who is asking for a lock: the Node counterpart of Redisson's thread.
 *
 * Inside a task (withLock's callback or client.runInTask) the owner is the task, carried through
 * every await by AsyncLocalStorage, so nested locking in one async call chain re-enters. Outside a
 * task the owner is the lock handle itself. Both are numbered from one process-wide counter, so an
 * owner number is unique in this process and `<clientId>:<number>` is unique everywhere (client
 * ids are unique per live client). A task may instead act as an explicit owner id, the same in
 * every process that uses it.
 *
 * Re-entry is nesting, not concurrency: one owner may run several branches side by side (a
 * `Promise.all`, a server or timer started inside a task). Frames tell them apart. A task starts a
 * frame, and each withLock body runs in a frame of its own inside the caller's; a lock held for a
 * body may be entered again from that body's frame or frames inside it, and a branch outside it
 * waits until the body is done (see OwnerGates).
 */
export class Frame {
  constructor(readonly parent?: Frame) {}

  /** Whether code running in this frame runs inside `frame` (it, or a frame opened within it). */
  isWithin(frame: Frame): boolean {
    return this === frame || (this.parent !== undefined && this.parent.isWithin(frame));
  }
}

export interface Task {
  /**
   * What can still release the task's holds, the same in every frame of it: the task itself, or
   * the lock handle a handle's withLock acts for.
   */
  readonly identity: object;
  readonly ownerNumber: number;
  /** An explicit owner id (runInTask's ownerId): written as it is, by every client. */
  readonly ownerId?: string;
  /** Where the code asking runs (the task's own frame, or a withLock body within it). */
  readonly frame: Frame;
}

const taskContext = new AsyncLocalStorage<Task>();
let lastOwnerNumber = 0;

export function nextOwnerNumber(): number {
  lastOwnerNumber += 1;
  return lastOwnerNumber;
}

export function currentTask(): Task | undefined {
  return taskContext.getStore();
}

/** Runs fn as a new owner (or as `ownerId`), whatever task (if any) the caller is in. */
export function runAsNewTask<T>(fn: () => T, ownerId?: string): T {
  const frame = ownerId === undefined ? new Frame() : frameOfOwner(ownerId);
  return taskContext.run({ identity: {}, ownerNumber: nextOwnerNumber(), ownerId, frame }, fn);
}

/**
 * Runs fn as the owner a lock handle is outside any task (its number, and its frame): withLock
 * through a handle acts for the handle, so it re-enters what the handle took by hand.
 */
export function runAsHandle<T>(handle: object, ownerNumber: number, frame: Frame, fn: () => T): T {
  return taskContext.run({ identity: handle, ownerNumber, frame }, fn);
}

/**
 * Tasks acting as one explicit owner id are one owner in Redis, so in the process too: they share
 * a root frame, and re-enter each other's holds taken by hand. Kept while some task uses it.
 */
const explicitFrames = new Map<string, WeakRef<Frame>>();
const explicitFrameCleanup = new FinalizationRegistry<string>((ownerId) => {
  if (explicitFrames.get(ownerId)?.deref() === undefined) explicitFrames.delete(ownerId);
});

function frameOfOwner(ownerId: string): Frame {
  let frame = explicitFrames.get(ownerId)?.deref();
  if (!frame) {
    frame = new Frame();
    explicitFrames.set(ownerId, new WeakRef(frame));
    explicitFrameCleanup.register(frame, ownerId);
  }
  return frame;
}

/** Runs fn in the caller's task, or as a new owner when the caller is in none. */
export function runInCurrentOrNewTask<T>(fn: () => T): T {
  return currentTask() ? fn() : runAsNewTask(fn);
}

/** Runs fn in the current task, in `frame` (a withLock body). */
export function runInFrame<T>(frame: Frame, fn: () => T): T {
  const task = currentTask();
  if (!task) return fn();
  // Spelled out, not spread: this runs for every withLock body, and a spread costs several times more.
  return taskContext.run(
    { identity: task.identity, ownerNumber: task.ownerNumber, ownerId: task.ownerId, frame },
    fn,
  );
}

/**
 * The key of one owner's state on one lock (its holds, its gate, its fair waiter). Remembers the
 * last pair: a lock() or unlock() asks for the same pair several times in a row, and a key built
 * anew each time is a new string to flatten and hash for every lookup.
 */
let lastKeyOwner: string | undefined;
let lastKeyName: string | undefined;
let lastKey = '';

export function ownerLockKey(ownerId: string, name: string): string {
  if (ownerId !== lastKeyOwner || name !== lastKeyName) {
    lastKeyOwner = ownerId;
    lastKeyName = name;
    lastKey = `${ownerId}\u0000${name}`;
  }
  return lastKey;
}

/** The id a task (or handle number) writes in a lock hash of the client `clientId`. */
export function ownerIdOf(clientId: string, task: Task | undefined, handleNumber: number): string {
  if (task?.ownerId !== undefined) return task.ownerId;
  return `${clientId}:${task ? task.ownerNumber : handleNumber}`;
}

/** The longest explicit owner id accepted. */
const MAX_OWNER_ID_LENGTH = 512;

/**
 * An explicit owner id: what a lock hash field holds (`orders:job-42`, or Redisson's
 * `<uuid>:<threadId>`). Newlines would break fair-lock messages; control characters and
 * absurd lengths are mistakes.
 */
export function checkOwnerId(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw Object.assign(new TypeError(`ownerId must be a non-empty string; got ${typeof value}`), {
      code: 'ERR_INVALID_ARG_TYPE',
    });
  }
  // eslint-disable-next-line no-control-regex
  if (value.length > MAX_OWNER_ID_LENGTH || /[\u0000-\u001f\u007f]/.test(value)) {
    throw Object.assign(
      new RangeError(
        `ownerId must be at most ${MAX_OWNER_ID_LENGTH} characters without control characters (such as newlines)`,
      ),
      { code: 'ERR_OUT_OF_RANGE' },
    );
  }
  // Fields of a lock hash that are not owners: an owner so named would be misread.
  if (isHoldMark(value) || value === RW_MODE_FIELD) {
    throw Object.assign(
      new RangeError(
        `ownerId must not be "${RW_MODE_FIELD}" nor start with "rlock_mark:": a read-write lock's hash ` +
          'names its mode so, and every lock hash the fields that mark holds',
      ),
      { code: 'ERR_OUT_OF_RANGE' },
    );
  }
  return value;
}
