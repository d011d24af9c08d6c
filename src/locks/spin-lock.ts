import { pauseFor } from '../timing';
import type { StepLimits, WakeSource } from '../wait';
import type { HandleOwner } from './base-lock';
import type { LockContext } from './context';
import { ReentrantLock } from './lock';

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
 * The reentrant lock without pub/sub (Redisson getSpinLock): the same hash, scripts and release
 * messages as getLock, so both exclude each other, but a waiter never subscribes. It attempts
 * again after pauses that grow exponentially, each with jitter (a random part between half and
 * all of it) so that waiters of many processes do not retry in step; never past the holder's ttl
 * or the wait's own time. For proxies and managed services that have no pub/sub.
 */
export class SpinLock extends ReentrantLock {
  override readonly kind = 'spin';
  constructor(
    context: LockContext,
    name: unknown,
    owner?: HandleOwner,
    private readonly backoff: Required<SpinLockOptions> = SPIN_DEFAULTS,
  ) {
    super(context, name, owner);
  }

  protected override async openWakeSource(_owner: string, _limits: StepLimits): Promise<WakeSource> {
    const { initialDelay, maxDelay, multiplier } = this.backoff;
    let delay = initialDelay;
    return {
      sleep: async (ms, signal) => {
        const pause = Math.max(1, Math.round(delay * (0.5 + Math.random() * 0.5)));
        delay = Math.min(maxDelay, delay * multiplier);
        await pauseFor(Math.min(ms, pause), [signal, this.context.closing]);
        return 'timeout';
      },
      release: () => undefined,
    };
  }
}
