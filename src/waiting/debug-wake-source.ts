import { debug } from '../events';
import type { WakeSource } from './acquire-or-wait';

/** The wake source of one wait, with a debug line for each sleep and wake-up (NODE_DEBUG=rlock). */
export async function debugWakeSource(
  name: string,
  ownerId: string,
  opened: Promise<WakeSource>,
): Promise<WakeSource> {
  const source = await opened;
  debug('lock %s: %s listens for releases', name, ownerId);
  return {
    sleep: async (ms, signal) => {
      debug('lock %s: %s waits up to %d ms', name, ownerId, Math.round(ms));
      const reason = await source.sleep(ms, signal);
      debug('lock %s: %s woke (%s)', name, ownerId, reason);
      return reason;
    },
    interrupt: () => source.interrupt(),
    release: () => source.release(),
  };
}
