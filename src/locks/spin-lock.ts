import type { ReleaseAnnouncement } from '../protocol/scripts';
import { pauseFor } from '../util/timing';
import type { StepLimits, WakeSource } from '../waiting/acquire-or-wait';
import type { HandleOwner } from './base/base-lock';
import type { LockContext } from '../context';
import { ReentrantLock } from './reentrant-lock';

/** How a spin lock's waiter backs off between attempts (Redisson's LockOptions.BackOff). */
export interface SpinLockOptions {
  /** The first pause, in ms. Default 16. */
  initialDelay?: number;
  /** The longest pause, in ms. Default 512. */
  maxDelay?: number;
  /** How much each pause grows over the one before. Default 2. */
  multiplier?: number;
}

export const SPIN_DEFAULTS: Required<SpinLockOptions> = { initialDelay: 16, maxDelay: 512, multiplier: 2 };

/**
 * The reentrant lock without pub/sub (Redisson getSpinLock): the same hash and scripts as getLock,
 * so both exclude each other, but it sends no pub/sub command at all: a waiter never subscribes,
 * and a release publishes nothing (as Redisson's RSpinLock), since its servers may have none (a
 * PUBLISH they do not know fails the release script). A waiter attempts again after pauses that
 * grow exponentially, each with jitter (a random part between half and all of it) so that waiters
 * of many processes do not retry in step; never past the holder's ttl or the wait's own time.
 */
export class SpinLock extends ReentrantLock {
  override readonly kind = 'spin';
  /** Nothing is published: its waiters poll, and keep no entry among the lock's waiters. */
  protected override readonly wokenOneAtATime = false;
  constructor(
    context: LockContext,
    name: unknown,
    owner?: HandleOwner,
    private readonly backoff: Required<SpinLockOptions> = SPIN_DEFAULTS,
  ) {
    super(context, name, owner);
  }

  /** Nothing is published: a getLock waiter elsewhere finds the lock free at its ttl re-check. */
  protected override announcement(): ReleaseAnnouncement {
    return 'none';
  }

  protected override async openWakeSource(_owner: string, _limits: StepLimits): Promise<WakeSource> {
    const { initialDelay, maxDelay, multiplier } = this.backoff;
    let delay = initialDelay;
    const cut: { end?: () => void } = {};
    return {
      sleep: async (ms, signal) => {
        const pause = Math.max(1, Math.round(delay * (0.5 + Math.random() * 0.5)));
        delay = Math.min(maxDelay, delay * multiplier);
        await pauseFor(Math.min(ms, pause), [signal, this.context.closing], cut);
        return 'timeout';
      },
      interrupt: () => {
        if (!cut.end) return false;
        cut.end();
        return true;
      },
      release: () => undefined,
    };
  }
}
