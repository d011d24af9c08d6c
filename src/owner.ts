import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who is asking for a lock: the Node counterpart of Redisson's thread.
 *
 * Inside a task (withLock's callback or client.runInTask) the owner is the task, carried through
 * every await by AsyncLocalStorage, so nested locking in one async call chain re-enters. Outside a
 * task the owner is the lock handle itself. Both are numbered from one process-wide counter, so an
 * owner number is unique in this process and `<clientId>:<number>` is unique everywhere.
 */
export interface Task {
  readonly ownerNumber: number;
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

/** Runs fn as a new owner, whatever task (if any) the caller is in. */
export function runAsNewTask<T>(fn: () => T): T {
  return taskContext.run({ ownerNumber: nextOwnerNumber() }, fn);
}

/** Runs fn in the caller's task, or as a new owner when the caller is in none. */
export function runInCurrentOrNewTask<T>(fn: () => T): T {
  return currentTask() ? fn() : runAsNewTask(fn);
}

export function ownerId(clientId: string, ownerNumber: number): string {
  return `${clientId}:${ownerNumber}`;
}
