import type { ClusterConnection, RedisConnection, ShardNode } from '../../redis/connection';
import { hashSlot } from '../../redis/slots';

/**
 * The connections a Subscriber listens on. A link delivers every message of the channels it was
 * asked for, and says when subscriptions were (re)made after messages may have been lost: a
 * reconnect, or channels moved to another node after a failover or a slot migration.
 *
 *   SingleLink   one connection (a standalone server, or Sentinel's current master).
 *   ClusterLink  one connection per cluster node it needs. Sharded: each channel is SSUBSCRIBEd on
 *                the master of its slot, so a release reaches only that shard. Classic: all channels
 *                on one node (the cluster bus broadcasts every PUBLISH), moved when that node goes.
 */
export interface LinkHandlers {
  message(channel: string, message: string): void;
  /** Subscriptions are in place again after messages may have been lost. */
  resubscribed(): void;
  /** The connection carrying every channel dropped: nothing is heard until `resubscribed`. */
  dropped(): void;
}

export interface PubSubLink {
  /** Resolves once the subscription is confirmed; from then on no message of it is missed. */
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * No ready check on a pub/sub connection: ioredis sends it (INFO) after the connection is up, and a
 * SUBSCRIBE that went out first (subscribe commands may, while the connection sets itself up)
 * puts the connection in subscriber mode, where the INFO is refused and ioredis drops the
 * connection as failed. ioredis' own cluster subscribers turn it off for the same reason.
 * No auto-pipelining either (a caller's `enableAutoPipelining` is copied by duplicate()): ioredis
 * keeps SUBSCRIBE out of its auto-pipelines, but not SSUBSCRIBE, and a subscriber gains nothing.
 */
export const SUBSCRIBER_OVERRIDES = { enableReadyCheck: false, enableAutoPipelining: false } as const;

/**
 * Whether a subscribe failed because the server has no such command (renamed away or disabled, as
 * on servers and proxies without pub/sub): asking again would fail the same way, forever.
 */
export function isUnknownCommand(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError' && /^ERR unknown command/i.test(error.message);
}

/**
 * One pub/sub connection and the channels wanted on it. After the connection drops and comes
 * back, ioredis resubscribes on its own before it reports 'ready'; one more subscribe of every
 * channel is harmless and, replies being in order, confirms that all of them are in place again.
 */
class Shard {
  readonly channels = new Set<string>();
  private dropped = false;
  /** The connection gave up reconnecting: only a new one can carry the channels. */
  ended = false;
  private closed = false;
  /** Settles at the connection's next 'ready', while subscriptions wait for it. */
  private ready?: Promise<void>;

  constructor(
    readonly connection: RedisConnection,
    private readonly sharded: boolean,
    private readonly owned: boolean,
    handlers: LinkHandlers,
    events: { dropped(shard: Shard): void; moved(): void; lost(shard: Shard, channel: string): void },
  ) {
    connection.on(sharded ? 'smessage' : 'message', (channel, message) => handlers.message(channel, message));
    // Errors reach the waiters through the subscribe calls and the resubscriptions; an 'error'
    // event without a listener would only print (or crash a process that treats it as fatal).
    if (owned) connection.on('error', () => undefined);
    // A node that gives a slot away (migration, demotion) drops its shard channels with an
    // SUNSUBSCRIBE nobody asked for; ioredis reports it only as a command-queue error whose text
    // ends with the reply: "... Last reply: sunsubscribe,<channel>,<count>".
    connection.on('error', (error) => {
      const reply = /Last reply: sunsubscribe,(.*),\d+$/s.exec(String(error?.message));
      if (reply?.[1] === undefined) return;
      this.channels.delete(reply[1]);
      events.lost(this, reply[1]);
    });
    connection.on('close', () => {
      if (this.closed) return;
      this.dropped = true;
      events.dropped(this);
    });
    connection.on('end', () => {
      this.ended = true;
      if (!this.closed) events.dropped(this);
    });
    connection.on('ready', () => {
      if (!this.dropped || this.closed) return;
      this.dropped = false;
      void this.confirmAll().then(() => handlers.resubscribed());
    });
    // ioredis leaves an SSUBSCRIBE answered with MOVED unsettled and emits 'moved' instead.
    connection.on('moved', () => events.moved());
  }

  get healthy(): boolean {
    return !this.dropped;
  }

  add(channel: string): Promise<unknown> {
    this.channels.add(channel);
    return this.whenReady()
      .then(() =>
        this.sharded
          ? shardCommands(this.connection).ssubscribe(channel)
          : this.connection.subscribe(channel),
      )
      .catch((error: unknown) => {
        // Not to be subscribed again after a reconnect: the server has no such command.
        if (isUnknownCommand(error)) this.channels.delete(channel);
        throw error;
      });
  }

  /**
   * Subscribe commands go out only on a ready connection. While it sets itself up ('connect',
   * before 'ready') ioredis writes them at once, then refuses its own ready check in subscriber
   * mode and drops the connection as failed (a connection rlock did not open may have the check
   * on); while it is down, `enableOfflineQueue: false` rejects them at once. After 'ready' the
   * connection's own resubscription and confirmAll() take over anyway. One listener serves every
   * channel waiting meanwhile.
   */
  private whenReady(): Promise<void> {
    const { status } = this.connection as { status?: string };
    if (status === undefined || status === 'ready') return Promise.resolve();
    if (status === 'end') return Promise.reject(new Error('Connection is closed (status end)'));
    if (status === 'wait')
      (this.connection as { connect?: () => Promise<unknown> }).connect?.().catch(() => undefined);
    this.ready ??= new Promise<void>((resolve) =>
      this.connection.once('ready', () => {
        this.ready = undefined;
        resolve();
      }),
    );
    return this.ready;
  }

  remove(channel: string): Promise<unknown> {
    this.channels.delete(channel);
    return this.sharded
      ? shardCommands(this.connection).sunsubscribe(channel)
      : this.connection.unsubscribe(channel);
  }

  confirmAll(): Promise<unknown> {
    return Promise.allSettled([...this.channels].map((channel) => this.add(channel)));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Disconnect, not QUIT: QUIT waits for an answer that a paused server or a dead node never
    // gives, and there is nothing to flush on a pub/sub connection.
    if (this.owned) this.connection.disconnect();
  }
}

export class SingleLink implements PubSubLink {
  private readonly shard: Shard;

  constructor(connection: RedisConnection, owned: boolean, sharded: boolean, handlers: LinkHandlers) {
    this.shard = new Shard(connection, sharded, owned, handlers, {
      dropped: () => handlers.dropped(),
      moved: () => {},
      // Only a cluster node gives channels away.
      lost: () => {},
    });
  }

  subscribe(channel: string): Promise<unknown> {
    return this.shard.add(channel);
  }

  unsubscribe(channel: string): Promise<unknown> {
    return this.shard.remove(channel);
  }

  close(): Promise<void> {
    return this.shard.close();
  }
}

/** Longest pause between two reconnection attempts of a node's pub/sub connection. */
const RECONNECT_MAX_MS = 1_000;
/** How often the slot map is read again while a channel has no healthy home. */
const REPLACE_RETRY_MS = 500;
/**
 * How often the slot map is read while channels are subscribed: a slot migrated to another node
 * drops its shard channels without a word to ioredis, so the map is the only witness.
 */
const SLOT_WATCH_MS = 5_000;

interface Placement {
  node?: string;
  /** The connection the channel was subscribed on. */
  shard?: Shard;
  confirmed: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

export class ClusterLink implements PubSubLink {
  private readonly shards = new Map<string, Shard>();
  private readonly placements = new Map<string, Placement>();
  private retryTimer?: NodeJS.Timeout;
  private readonly watchTimer: NodeJS.Timeout;
  private closed = false;
  private readonly onRefresh = (): void => this.replace();

  /**
   * @param anchor in classic mode, the channel whose slot's master carries every subscription
   */
  constructor(
    private readonly cluster: ClusterConnection,
    private readonly sharded: boolean,
    private readonly anchor: string,
    private readonly handlers: LinkHandlers,
  ) {
    cluster.on('refresh', this.onRefresh);
    this.watchTimer = setInterval(() => {
      if (this.placements.size > 0) this.requestRefresh();
    }, SLOT_WATCH_MS);
    this.watchTimer.unref();
  }

  subscribe(channel: string): Promise<unknown> {
    return new Promise<void>((resolve, reject) => {
      const placement: Placement = { confirmed: false, resolve, reject };
      this.placements.set(channel, placement);
      this.place(channel, placement);
    });
  }

  async unsubscribe(channel: string): Promise<unknown> {
    const placement = this.placements.get(channel);
    this.placements.delete(channel);
    const shard = placement?.shard;
    if (!shard) return;
    const removed = shard.remove(channel);
    removed.catch(() => undefined);
    // The last channel: closing the connection unsubscribes it. A connection that is down takes
    // the SUNSUBSCRIBE when it is back; waiting for that could mean waiting for a dead node.
    if (shard.channels.size === 0) this.dropShard(placement.node as string, shard);
    else if (shard.healthy) await removed;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cluster.off('refresh', this.onRefresh);
    clearInterval(this.watchTimer);
    clearTimeout(this.retryTimer);
    this.placements.clear();
    await Promise.all([...this.shards.values()].map((shard) => shard.close()));
    this.shards.clear();
  }

  /** The node a channel belongs on now, by the cluster's slot map. */
  private nodeFor(channel: string): string | undefined {
    return this.cluster.slots[hashSlot(this.sharded ? channel : this.anchor)]?.[0];
  }

  private place(channel: string, placement: Placement): Promise<unknown> {
    const node = this.nodeFor(channel);
    const shard = node === undefined ? undefined : this.shardOf(node);
    placement.node = node;
    placement.shard = shard;
    if (!shard) {
      this.requestRefresh(REPLACE_RETRY_MS);
      return Promise.resolve();
    }
    return shard.add(channel).then(
      () => {
        if (this.placements.get(channel) !== placement || placement.node !== node) return;
        placement.confirmed = true;
        placement.resolve();
      },
      (error: unknown) => {
        if (this.placements.get(channel) !== placement || placement.node !== node) return;
        if (!placement.confirmed) placement.reject(error);
        // A node without pub/sub: placing the channel again, anywhere, fails the same way.
        if (isUnknownCommand(error)) {
          this.placements.delete(channel);
          if (shard.channels.size === 0) this.dropShard(node as string, shard);
          return;
        }
        this.requestRefresh(REPLACE_RETRY_MS);
      },
    );
  }

  /**
   * After the slot map changed (failover, migration) or a node went away: every channel whose
   * home moved, or whose subscription is not confirmed, is subscribed where it belongs now; once
   * that is done, waiters re-check (a release may have been announced where nobody listened).
   */
  private replace(): void {
    if (this.closed) return;
    const moves: Promise<unknown>[] = [];
    for (const [channel, placement] of this.placements) {
      const node = this.nodeFor(channel);
      const current = placement.shard;
      // Still at home: a dropped connection resubscribes by itself when it comes back. (A
      // channel the node gave away is unconfirmed: it is subscribed again, wherever it belongs.)
      if (node === placement.node && current && !current.ended && placement.confirmed) continue;
      if (current && (node !== placement.node || current.ended)) {
        current.remove(channel).catch(() => undefined);
        if (current.channels.size === 0) this.dropShard(placement.node as string, current);
      }
      placement.confirmed = false;
      moves.push(this.place(channel, placement));
    }
    if (moves.length > 0) {
      void Promise.allSettled(moves).then(() => {
        if (!this.closed) this.handlers.resubscribed();
      });
    }
  }

  private isHome(placement: Placement): boolean {
    return placement.confirmed && placement.shard !== undefined && placement.shard.healthy;
  }

  private shardOf(node: string): Shard | undefined {
    let shard = this.shards.get(node);
    if (shard && !shard.ended) return shard;
    if (shard) this.dropShard(node, shard);
    const source = this.cluster.nodes('all').find((candidate) => nodeKey(candidate) === node);
    if (!source) return undefined;
    // A cluster's own node connections never reconnect (ioredis waits for MOVED instead); a
    // subscriber must, or a dropped connection would silence its channels until the slot map moves.
    const connection = source.duplicate({
      ...SUBSCRIBER_OVERRIDES,
      retryStrategy: (attempt) => Math.min(attempt * 100, RECONNECT_MAX_MS),
    });
    shard = new Shard(connection, this.sharded, true, this.handlers, {
      dropped: () => this.requestRefresh(REPLACE_RETRY_MS),
      moved: () => this.requestRefresh(),
      lost: (from, channel) => {
        const placement = this.placements.get(channel);
        if (placement?.shard !== from) return;
        placement.confirmed = false;
        this.requestRefresh();
      },
    });
    this.shards.set(node, shard);
    return shard;
  }

  private dropShard(node: string, shard: Shard): void {
    if (this.shards.get(node) !== shard) return;
    this.shards.delete(node);
    void shard.close();
  }

  /** Reads the slot map again (now, or after `delay`); 'refresh' then re-places what moved. */
  private requestRefresh(delay = 0): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.closed) return;
      this.cluster.refreshSlotsCache((error) => {
        // The map could not be read, or it still names a node that is gone: look again.
        if (error || [...this.placements.values()].some((placement) => !this.isHome(placement))) {
          this.requestRefresh(REPLACE_RETRY_MS);
        }
      });
    }, delay);
    this.retryTimer.unref();
  }
}

function nodeKey(node: ShardNode): string {
  return `${node.options.host}:${node.options.port}`;
}

function shardCommands(
  connection: RedisConnection,
): Required<Pick<RedisConnection, 'ssubscribe' | 'sunsubscribe'>> {
  if (typeof connection.ssubscribe !== 'function' || typeof connection.sunsubscribe !== 'function') {
    throw new TypeError('sharded pub/sub needs a client with ssubscribe() and sunsubscribe() (ioredis 5)');
  }
  return connection as Required<Pick<RedisConnection, 'ssubscribe' | 'sunsubscribe'>>;
}
