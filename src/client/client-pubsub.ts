import type { AsyncResource } from 'node:async_hooks';
import type { ClientSettings } from './options';
import { clientChannel } from '../protocol/keys';
import type { PublishCommand } from '../protocol/scripts';
import type { RedisConnection } from '../redis/connection';
import type { RedisCalls } from '../redis/redis-calls';
import type { StepLimits } from '../waiting/acquire-or-wait';
import { openLink, publishCommandOf, resolvePubSubMode, type PubSubMode } from '../waiting/pubsub/mode';
import { Subscriber, type SubscriberHooks } from '../waiting/pubsub/subscriber';

/**
 * A client's pub/sub: which mode it uses (classic, or a cluster's shard channels; asked of the
 * servers once), the command releases announce themselves with, and the one subscriber its waits
 * share, opened by the first wait that needs it.
 */
export class ClientPubSub {
  /** Settles once the pub/sub mode is known (on a cluster, after asking the servers). */
  private modeResolution?: Promise<PubSubMode>;
  private publishResolution?: Promise<PublishCommand>;
  private publishKnown?: PublishCommand;
  private instance?: Subscriber;

  constructor(
    private readonly redis: RedisConnection,
    private readonly settings: ClientSettings,
    private readonly clientId: string,
    /** The client's own async scope, where what lives as long as the client starts. */
    private readonly scope: AsyncResource,
    private readonly hooks: SubscriberHooks,
  ) {}

  /** The command itself once the mode is known: a release need not wait for anything. */
  publishCommand(): PublishCommand | Promise<PublishCommand> {
    if (this.publishKnown) return this.publishKnown;
    this.publishResolution ??= this.mode().then(
      (mode) => (this.publishKnown = publishCommandOf(mode)),
      (error: unknown) => {
        this.publishResolution = undefined;
        throw error;
      },
    );
    return this.publishResolution;
  }

  /**
   * The subscriber, once the pub/sub mode is known. Its caller subscribes next with the same
   * `limits`: what this took (a connection that was not ready yet) is taken off their budget, so
   * that the two steps together keep the one step's budget. `stillOpen` throws once the client
   * is closing.
   */
  async subscriber(
    calls: RedisCalls,
    name: string,
    limits: StepLimits,
    stillOpen: () => void,
  ): Promise<Subscriber> {
    stillOpen();
    const startedAt = performance.now();
    const mode = await calls.run(name, 'subscribe', () => this.mode(), limits);
    limits.budget = Math.max(1, limits.budget - (performance.now() - startedAt));
    stillOpen();
    this.instance ??= this.scope.runInAsyncScope(() => this.newSubscriber(mode));
    return this.instance;
  }

  /** The subscriber, if a wait opened it already. */
  opened(): Subscriber | undefined {
    return this.instance;
  }

  async close(): Promise<void> {
    await this.instance?.close();
  }

  private mode(): Promise<PubSubMode> {
    this.modeResolution ??= resolvePubSubMode(this.redis, this.settings.pubSub).catch((error: unknown) => {
      // A failed probe (server unreachable) decides nothing: the next call asks again.
      this.modeResolution = undefined;
      throw error;
    });
    return this.modeResolution;
  }

  private newSubscriber(mode: PubSubMode): Subscriber {
    const home = clientChannel(this.clientId);
    const given = this.settings.subscriber && { connection: this.settings.subscriber, owned: false };
    const prefix = this.settings.keyPrefix;
    return new Subscriber(
      (handlers) => openLink(this.redis, mode, prefix + home, given, handlers),
      // Sharded channels are bound to the locks' slots: no home channel there.
      mode === 'sharded' ? undefined : home,
      this.hooks,
      prefix,
    );
  }
}
