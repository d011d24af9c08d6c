import { LockLostError } from '../../errors';
import type { LostLease } from '../../ownership/hold-book';
import { giveBack, type LateMembers, type Taken } from './group-round';

/** The members one acquisition of a group holds, watched for lost leases. */
export interface Tracker {
  readonly taken: Taken[];
  /** performance.now() when the group was acquired. */
  readonly acquiredAt: number;
  readonly controller: AbortController;
  /**
   * Whether a withLock body or a hold() handed out this acquisition's signal. A fixed lease that
   * simply runs out is then a loss to report; for a group taken by hand (lock(leaseTime)) it is
   * the end the caller asked for, as for a single lock.
   */
  watched: boolean;
  /** Stops watching, and ends the acquisition's late members (see LateMembers). */
  dispose(): void;
}

export interface QuorumWatch {
  name: string;
  quorum: number;
  /** How many members the group has. */
  members: number;
  ownerId: string;
  reportLost(lost: LostLease): void;
  /**
   * With a fixed lease that the members took longer at first: when the group's lease ends
   * (performance.now() time). A late member is cut to what is left of it.
   */
  leaseEnd?: number;
}

/**
 * Watches the members an acquisition holds: once fewer than the quorum are, the group's loss is
 * reported (members are held quietly) and withLock's signal aborts. A late member that is granted
 * while the acquisition lasts joins it. Nothing here refers to the group itself: a group dropped
 * while it holds must be collectable, so that its members' holds are found orphaned.
 */
export function watchQuorum(taken: Taken[], late: LateMembers, watch: QuorumWatch): Tracker {
  const controller = new AbortController();
  // What the listener may see: not the members (see onMemberLost).
  const count = { held: 0, watched: false };
  const onLost = onMemberLost(watch, controller, count);
  const watches: Array<{ signal: AbortSignal; dispose: () => void }> = [];
  let disposed = false;
  const watchMember = ({ member }: Taken): void => {
    const memberWatch = member.watchCurrentHold();
    if (!memberWatch) return;
    watches.push(memberWatch);
    count.held += 1;
    memberWatch.signal.addEventListener('abort', onLost, { once: true });
  };
  for (const member of taken) watchMember(member);
  const join = async (joined: Taken): Promise<void> => {
    const { leaseEnd } = watch;
    if (leaseEnd !== undefined) {
      const left = Math.floor(leaseEnd - performance.now());
      try {
        if (left < 1) throw new Error('the lease ended before the member answered');
        await joined.member.shortenLease(joined.hold, left);
      } catch {
        // Held longer than the group's lease: given back rather than kept past it.
        return giveBack(joined);
      }
    }
    // Released meanwhile: the group's unlock() did not know of it.
    if (disposed) return giveBack(joined);
    taken.push(joined);
    watchMember(joined);
  };
  late.joinTo((joined) => void join(joined));
  return {
    taken,
    acquiredAt: performance.now(),
    controller,
    get watched() {
      return count.watched;
    },
    set watched(watched: boolean) {
      count.watched = watched;
    },
    dispose: () => {
      disposed = true;
      late.end();
      for (const memberWatch of watches) {
        memberWatch.signal.removeEventListener('abort', onLost);
        memberWatch.dispose();
      }
    },
  };
}

/**
 * The listener told of each member's lost lease. A function of its own, so that its closure keeps
 * none of the members: the client's book keeps it (on the member's hold), and a dropped group's
 * member handles must be collectable.
 */
function onMemberLost(
  watch: QuorumWatch,
  controller: AbortController,
  count: { held: number; watched: boolean },
): (event: Event) => void {
  const { name, quorum, members, ownerId, reportLost } = watch;
  return (event) => {
    count.held -= 1;
    if (count.held >= quorum || controller.signal.aborted) return;
    const cause = (event.target as AbortSignal).reason as Error;
    // The group itself was dropped: its members report themselves as orphaned.
    if (cause instanceof LockLostError && cause.lostCode === 'orphaned') return controller.abort(cause);
    const reason = `fewer than ${quorum} of its ${members} locks are held: ${cause.message}`;
    // The fixed lease of a group taken by hand ran out: the end its caller asked for, not a loss.
    if (cause instanceof LockLostError && cause.lostCode === 'lease-expired' && !count.watched) {
      return controller.abort(new LockLostError(name, ownerId, 'lease-expired', reason));
    }
    controller.abort(new LockLostError(name, ownerId, 'quorum-lost', reason));
    reportLost({ name, ownerId, code: 'quorum-lost', reason });
  };
}
