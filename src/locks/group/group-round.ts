import type { Hold } from '../../ownership/hold-book';
import type { Frame } from '../../ownership/owner';
import type { BaseLock } from '../base/base-lock';

/**
 * One attempt of a group lock (see GroupLock): every member is asked at once, each within the time
 * left, and the round is decided as soon as `quorum` members are held (taken) or can no longer be
 * (failed).
 */

/** A member a round took, and the hold it took of it. */
export interface Taken {
  member: BaseLock;
  hold: Hold;
}

export interface Round {
  /** The members held when the round was decided. */
  taken: Taken[];
  /** A member waited for another holder. */
  contended: boolean;
  /** The last member error, if any. */
  error?: unknown;
  /** How many members failed with an error, or were called off before they answered at all. */
  errors: number;
  /** The members still being asked when the quorum was held (see LateMembers). */
  late: LateMembers;
}

/** Calls off the members still being asked once a round is decided, or its acquisition is over. */
export class RoundDecided extends Error {}

/**
 * While a round already holds members, it waits for the rest only briefly (50-150 ms, at random):
 * two groups taking the same locks in opposite orders each hold what the other waits for, and must
 * not both wait out their whole time. Waiting for the first member costs nothing.
 */
export const holdingWait = (): number => 50 + Math.random() * 100;

export interface RoundAsk {
  quorum: number;
  /** How long a member may wait for another holder, in ms (0: one attempt). */
  memberWait: number;
  /** The budget of a member's one attempt (memberWait 0), when less than commandTimeout. */
  memberBudget?: number;
  memberLease: number;
  signal?: AbortSignal;
  body?: Frame;
  /** The group's client closing: it calls off every member. */
  closing: AbortSignal;
}

/** What one member of a round is doing. */
interface Asking {
  callOff: AbortController;
  /** Its first answer said another owner holds it: it waits. */
  waiting: boolean;
  settled: boolean;
}

/**
 * Asks every member at once. A round that holds its quorum answers at once: the members still
 * waiting for another holder are called off, and those that have not answered yet go on as late
 * members (see LateMembers). A round that fails answers when every member settled (each called
 * off), with all that was taken, to be given back. A round that holds members but waits for others
 * that another holder keeps waits only `holdingWait()` more (two groups must not hold each other's
 * members for their whole wait); a member that has not answered at all is waited for within its
 * own budget, and then counts as failed.
 */
export function askMembers(members: BaseLock[], ask: RoundAsk): Promise<Round> {
  const { quorum, memberWait, memberBudget, memberLease, signal, body, closing } = ask;
  const allowedFailures = members.length - quorum;
  const round: Round = { taken: [], errors: 0, contended: false, late: new LateMembers() };
  const asking: Asking[] = [];
  let failed = 0;
  /** Members whose wait ended without the lock: another holder kept it. */
  let refused = 0;
  let unanswered = members.length;
  let holding: NodeJS.Timeout | undefined;
  let decided = false;
  /** The round answered with its quorum held: what is granted from now on arrives late. */
  let heldEarly = false;
  return new Promise((resolve) => {
    const decide = (): void => {
      clearTimeout(holding);
      if (decided) return;
      decided = true;
      heldEarly = round.taken.length >= quorum;
      for (const member of asking) {
        if (member.settled) continue;
        if (heldEarly && !member.waiting) round.late.keep(member.callOff);
        else member.callOff.abort(new RoundDecided());
      }
      if (heldEarly) resolve(round);
    };
    const review = (): void => {
      if (decided) return;
      if (round.taken.length >= quorum || failed > allowedFailures) decide();
      else if (round.taken.length > 0 && unanswered === 0 && memberWait > 0 && !holding) {
        holding = setTimeout(decide, holdingWait());
      }
    };
    const asked = members.map(async (member) => {
      const state: Asking = { callOff: new AbortController(), waiting: false, settled: false };
      asking.push(state);
      // Called off when the round is decided (or, for a late member, when its acquisition is
      // over), when the caller aborts, or when the group's client closes.
      const memberSignal = AbortSignal.any(
        signal ? [state.callOff.signal, signal, closing] : [state.callOff.signal, closing],
      );
      let answered = false;
      const answer = (): void => {
        if (answered) return;
        answered = true;
        unanswered -= 1;
      };
      try {
        const acquired = await member.tryLockAsMember({
          waitTime: memberWait,
          budget: memberBudget,
          leaseTime: memberLease,
          signal: memberSignal,
          body,
          onHeldElsewhere: () => {
            // A late member held by someone else is not waited for: the quorum is held already.
            if (decided) return state.callOff.abort(new RoundDecided());
            round.contended = true;
            state.waiting = true;
            answer();
            review();
          },
        });
        if (acquired && heldEarly) round.late.granted({ member, hold: acquired });
        else if (acquired) round.taken.push({ member, hold: acquired });
        else {
          failed += 1;
          refused += 1;
        }
      } catch (error) {
        failed += 1;
        if (!(error instanceof RoundDecided) && error !== signal?.reason) {
          round.errors += 1;
          round.error = error;
        } else if (error instanceof RoundDecided && !answered && !round.contended && refused === 0) {
          // Called off before Redis said anything: its master may be as unreachable as the others.
          // (Not when another holder decided the round: a slow answer is no outage then.)
          round.errors += 1;
        }
      } finally {
        state.settled = true;
        round.late.settled(state.callOff);
        // Its signal, made with AbortSignal.any over the client's closing signal and listened to,
        // is kept by Node until it aborts: and with it what its listeners reach (the member's
        // handle, which must stay collectable). The member is done with it.
        state.callOff.abort(new RoundDecided());
      }
      answer();
      review();
    });
    void Promise.all(asked).then(() => {
      clearTimeout(holding);
      resolve(round);
    });
  });
}

/**
 * The members of a RedLock round that had not answered yet when its quorum was held. They are not
 * called off: a RedLock that holds only the first quorum of masters to answer falls below it as soon
 * as one of those dies, although a live master that answered a moment later could have kept it.
 * Each grant that arrives joins the acquisition the round became (see joinTo); once the acquisition
 * is over (released, or never used), the members still asked are called off and whatever they
 * are granted is given back.
 */
export class LateMembers {
  /** The call-offs of the members still being asked. */
  private readonly asking = new Set<AbortController>();
  /** Grants that came before the acquisition took them. */
  private early: Taken[] = [];
  private sink?: (taken: Taken) => void;
  private over = false;

  /** A member still being asked after the quorum was held; `callOff` ends its attempt. */
  keep(callOff: AbortController): void {
    if (this.over) callOff.abort(new RoundDecided());
    else this.asking.add(callOff);
  }

  /** The member of `callOff` answered (granted, refused or failed). */
  settled(callOff: AbortController): void {
    this.asking.delete(callOff);
  }

  granted(taken: Taken): void {
    if (this.over) giveBack(taken);
    else if (this.sink) this.sink(taken);
    else this.early.push(taken);
  }

  /** From now on every grant goes to `sink`, those that came already first. */
  joinTo(sink: (taken: Taken) => void): void {
    this.sink = sink;
    const early = this.early;
    this.early = [];
    for (const taken of early) sink(taken);
  }

  /** The acquisition is over: members still asked are called off, and what they take given back. */
  end(): void {
    this.over = true;
    for (const callOff of this.asking) callOff.abort(new RoundDecided());
    this.asking.clear();
    for (const taken of this.early) giveBack(taken);
    this.early = [];
  }
}

/** Gives a member's hold back in the background: nobody holds the group through it. */
export function giveBack({ member, hold }: Taken): void {
  member.releaseAsMember(hold).catch(() => undefined);
}
