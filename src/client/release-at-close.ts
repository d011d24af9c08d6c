import type { LockContext } from '../context';
import type { HoldBook, HoldReleaser } from '../ownership/hold-book';

/**
 * close(): releases every hold still in the book, and those whose holder was garbage-collected,
 * so that waiters elsewhere take over at once. Holds of explicit owner ids stay in Redis: they may
 * be meant to outlive this client (another worker releases them); they are no longer renewed.
 * (Releases Redis never answered are being re-sent already.)
 */
export async function releaseHeldAtClose(book: HoldBook, context: LockContext): Promise<void> {
  const entries = [...book.all(), ...book.takeOrphaned()].filter((entry) => !entry.explicit);
  const releases = entries.map(async (entry) => {
    // Every lock class takes the client's context; the book keeps it untyped (see LockClass).
    const LockOfHold = entry.lockClass as unknown as new (context: LockContext, name: string) => HoldReleaser;
    const lock = new LockOfHold(context, entry.name);
    for (let i = entry.holds.length - 1; i >= 0; i -= 1) {
      // A group's member (held quietly) is not reported alone, at close either.
      await lock.releaseAtClose(entry.ownerId, entry.holds[i] as (typeof entry.holds)[number], entry.quiet);
    }
  });
  await Promise.allSettled(releases);
}
