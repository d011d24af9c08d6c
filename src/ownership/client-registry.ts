import { hostname } from 'node:os';
import { basename } from 'node:path';
import { clientEntryKey } from '../protocol/keys';
import type { RedisErrorReport } from '../events';
import type { RedisCalls } from '../redis/redis-calls';
import type { RedisConnection } from '../redis/connection';
import { announceClient } from '../protocol/scripts';

/**
 * Where an owner id comes from. An owner id in a lock hash is `<clientId>:<n>`; while a client
 * holds or waits for anything, it keeps a short-lived entry at `rlock_client:{<clientId>}` saying
 * which host and process it is, so an operator (or `rlock inspect`) can tell who holds a lock.
 *
 * The entry is written alongside the first acquisition (never in its way) and refreshed so that it
 * outlives every lease the client holds; an idle client lets it expire. It is deleted by close().
 */

/** The shortest lifetime of an entry, in ms: refreshing it is then rare. */
const MIN_LIFETIME_MS = 60_000;

export class ClientRegistry {
  private readonly key: string;
  private readonly facts: string[];
  /** performance.now() until which the entry surely lives. */
  private announcedUntil = 0;
  /** The announcement on its way, if any. */
  private announcing?: Promise<void>;
  private removed = false;

  constructor(
    private readonly calls: RedisCalls,
    private readonly redis: RedisConnection,
    private readonly clientId: string,
    label: string | undefined,
    private readonly report: (report: RedisErrorReport) => void,
  ) {
    this.key = clientEntryKey(clientId);
    const facts: Record<string, string> = {
      host: hostname(),
      pid: String(process.pid),
      script: process.argv[1] === undefined ? '' : basename(process.argv[1]),
      node: process.version,
      started: new Date().toISOString(),
    };
    if (label !== undefined) facts.label = label;
    this.facts = Object.entries(facts).flat();
  }

  /** Makes sure the entry lives at least `ms` more; costs nothing when it already does. */
  keepFor(ms: number): void {
    const now = performance.now();
    if (this.removed || this.announcing || this.announcedUntil >= now + ms) return;
    const lifetime = Math.max(2 * ms, MIN_LIFETIME_MS);
    this.announcing = this.calls
      .run(this.clientId, 'announce', () => announceClient(this.redis, [this.key], [lifetime, ...this.facts]))
      .then(
        () => {
          this.announcedUntil = now + lifetime;
        },
        (error: unknown) => this.report({ name: this.key, operation: 'announce', error }),
      )
      .finally(() => {
        this.announcing = undefined;
      });
  }

  /** Deletes the entry (at close), after an announcement still on its way. */
  async remove(): Promise<void> {
    this.removed = true;
    await this.announcing;
    if (this.announcedUntil === 0) return;
    this.announcedUntil = 0;
    await this.calls.run(this.clientId, 'announce', () => this.redis.del(this.key)).catch(() => undefined);
  }
}
