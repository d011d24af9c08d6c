import { createInterface } from 'node:readline/promises';
import { LockClient } from '../client/lock-client';
import type { Connection } from './connect';
import { describeState } from './inspect';
import { readState, type NameState } from './state';
import { UsageError } from './usage';

/** force-unlock ended without unlocking: nothing was there, or the operator said no. */
export class NothingDone extends Error {}

export interface Unlocked {
  name: string;
  /** The state just before the delete. */
  before: NameState;
  deleted: boolean;
}

async function confirm(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await prompt.question(question)).trim());
  } finally {
    prompt.close();
  }
}

/**
 * `rlock force-unlock <name>`: deletes the lock whoever holds it, through the lock kind's own
 * force release, so its waiters wake at once (a fair lock goes straight to the next in line; a
 * read-write lock's readers and writers hear it on its own channel).
 */
export async function forceUnlock(
  redis: Connection,
  name: string,
  keyPrefix: string,
  options: { yes: boolean; json: boolean; timeoutMs: number },
): Promise<Unlocked> {
  const before = await readState(redis, name, keyPrefix);
  if (!before.kinds.includes('lock') && !before.kinds.includes('read-write lock')) {
    throw new NothingDone(
      before.kinds.length === 0
        ? `nothing to unlock: no lock is held under "${name}"`
        : `nothing to unlock: "${name}" holds ${before.kinds.join(', ')}, not a lock`,
    );
  }
  if (!options.yes) {
    if (!process.stdin.isTTY) {
      throw new UsageError('force-unlock asks before it deletes; without a terminal, pass --yes');
    }
    process.stderr.write(`${describeState(before)}\n\n`);
    if (!(await confirm(`Delete lock "${name}" and wake its waiters? [y/N] `))) {
      throw new NothingDone('not confirmed: nothing was changed');
    }
  }
  // The command's connection already carries the keyPrefix, as the services' connections do.
  const client = new LockClient(redis, { commandTimeout: options.timeoutMs });
  try {
    let lock = before.kinds.includes('fair queue') ? client.getFairLock(name) : client.getLock(name);
    if (before.kinds.includes('read-write lock')) {
      // Its own force release: the half of its mode deletes it and wakes every waiter on
      // redisson_rwlock:{name}, where its readers and writers (rlock's and Redisson's) listen.
      const rw = client.getReadWriteLock(name);
      lock = before.mode === 'write' ? rw.writeLock() : rw.readLock();
    }
    const deleted = await lock.forceUnlock();
    return { name, before, deleted };
  } finally {
    await client.close({ timeout: 1_000 });
  }
}
