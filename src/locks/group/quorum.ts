import { LockNotHeldError } from '../../errors';

/**
 * How a group lock turns its members' answers into one, as they arrive: it answers as soon as the
 * answer is decided, and never reads a member that could not be asked as a "no". When the members
 * that did answer leave the question open (too few answered for a quorum to say yes or no), the
 * answer is the error of a member that could not.
 */
interface Tally<T> {
  values: T[];
  errors: unknown[];
  pending: number;
}

type Verdict<R> = { value: R } | { error: unknown } | undefined;

/** Settles with `decide`'s first verdict, checked after each answer. */
function tally<T, R>(work: Array<Promise<T>>, decide: (tally: Tally<T>) => Verdict<R>): Promise<R> {
  return new Promise((resolve, reject) => {
    const state: Tally<T> = { values: [], errors: [], pending: work.length };
    let settled = false;
    const review = (): void => {
      if (settled) return;
      const verdict = decide(state);
      if (!verdict) return;
      settled = true;
      if ('error' in verdict) reject(verdict.error);
      else resolve(verdict.value);
    };
    for (const promise of work) {
      promise.then(
        (value) => {
          state.pending -= 1;
          state.values.push(value);
          review();
        },
        (error: unknown) => {
          state.pending -= 1;
          state.errors.push(error);
          review();
        },
      );
    }
    review();
  });
}

/** Whether at least `quorum` members say yes. */
export function quorumSaysYes(work: Array<Promise<boolean>>, quorum: number): Promise<boolean> {
  return tally<boolean, boolean>(work, ({ values, errors, pending }) => {
    const yes = values.filter(Boolean).length;
    if (yes >= quorum) return { value: true };
    // Even if every member still out, and every one that failed, said yes: no quorum.
    if (yes + pending + errors.length < quorum) return { value: false };
    if (pending === 0) return { error: errors[0] };
    return undefined;
  });
}

/**
 * A number a quorum of members vouches for (ttls, hold counts): the largest value that at least
 * `quorum` members have reached, i.e. the quorum-th largest answer. The first `quorum` answers may
 * include a member that holds nothing (0, -2) while the others hold, so a "nothing" answer waits
 * for the members still out: one of them may lift it. A positive answer is given at once: a quorum
 * has at least that much, and a master that is down does not hold the answer up. `rank` orders
 * values (a ttl of -1, no expiry, ranks above every number).
 */
export function quorumAtLeast(
  work: Array<Promise<number>>,
  quorum: number,
  rank: (value: number) => number = (value) => value,
): Promise<number> {
  return tally<number, number>(work, ({ values, errors, pending }) => {
    if (values.length + pending < quorum) return { error: errors[0] };
    if (values.length < quorum) return undefined;
    const highestFirst = [...values].sort((a, b) => rank(b) - rank(a));
    const answer = highestFirst[quorum - 1] as number;
    if (pending === 0 || rank(answer) > 0) return { value: answer };
    // Each answer still out can lift the quorum-th largest up to one place higher, no further.
    const liftedTo = highestFirst[quorum - 1 - pending];
    return liftedTo !== undefined && rank(liftedTo) === rank(answer) ? { value: answer } : undefined;
  });
}

/** forceUnlock: whether any member existed, once a quorum answered. */
export function quorumDeleted(work: Array<Promise<boolean>>, quorum: number): Promise<boolean> {
  return tally<boolean, boolean>(work, ({ values, errors, pending }) => {
    if (values.length >= quorum) return { value: values.some(Boolean) };
    if (values.length + pending < quorum) return { error: errors[0] };
    return undefined;
  });
}

/**
 * unlock. All-or-nothing (MultiLock): every member must be released. Otherwise (RedLock) it is
 * done once so many members are let go (released, or not held by this owner) that at most
 * `stillHeld` (quorum - 1) can still be held, one of them released: a master that is down does not
 * hold the answer up (its hold ends with its lease). Nothing released: LockNotHeldError.
 */
export function quorumReleased(
  work: Array<Promise<void>>,
  rule: { allOrNothing: boolean; stillHeld: number; groupName: string; ownerId: string },
): Promise<void> {
  const needed = rule.allOrNothing ? work.length : Math.max(1, work.length - rule.stillHeld);
  const notHeld = new LockNotHeldError(rule.groupName, rule.ownerId);
  return tally(
    work.map((promise) =>
      promise.then(
        () => 'released' as const,
        (error: unknown) => {
          if (error instanceof LockNotHeldError) return 'not held' as const;
          throw error;
        },
      ),
    ),
    ({ values, errors, pending }) => {
      if (values.length + pending < needed) return { error: errors[0] };
      if (values.length < needed) return undefined;
      if (rule.allOrNothing) return values.includes('not held') ? { error: notHeld } : { value: undefined };
      return values.includes('released') ? { value: undefined } : { error: notHeld };
    },
  );
}
