/**
 * An HTTP service (node:http, no framework) that locks per order, and shuts down without leaving
 * locks behind.
 *
 *   POST /orders/<id>/pay   pays the order under the lock `order:<id>`. A second request for the
 *                           same order, in this process or any other, waits up to ORDER_WAIT_MS for
 *                           it and then gets 409 Conflict with Retry-After; paying twice charges once.
 *   GET  /orders/<id>       the order's state (no lock needed to read it)
 *
 * On SIGTERM or SIGINT it stops accepting connections, lets the requests in flight finish, closes
 * the lock client (whatever is still held is released, so other processes take over at once, not
 * after the lease), quits its Redis connection and exits by itself, with code 0. A second signal
 * ends it at once.
 *
 * Run it:   REDIS_URL=redis://localhost:6379 npx tsx examples/http-orders.ts
 * Try it:   curl -X POST localhost:3000/orders/42/pay & curl -X POST localhost:3000/orders/42/pay
 * Settings: PORT (3000), HOST (all interfaces), ORDER_WAIT_MS (500), ORDER_WORK_MS (how long paying
 *           takes here, 200), DRAIN_TIMEOUT_MS (10000), CLOSE_TIMEOUT_MS (2000).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { ClientClosedError, LockClient, LockLostError, LockTimeoutError, RedisUnavailableError } from 'rlock';

export interface OrdersOptions {
  redisUrl: string;
  /** 0 picks a free port (see `url`). */
  port?: number;
  host?: string;
  /** How long a request waits for an order another request holds, in ms. */
  waitTime?: number;
  /** How long paying takes (a stand-in for the payment provider's call), in ms. */
  workTime?: number;
  /** How long requests in flight may take to finish once shutdown begins, in ms. */
  drainTimeout?: number;
  /** Then, how long bodies still running get after their signal aborts, in ms. */
  closeTimeout?: number;
  log?: (line: string) => void;
}

export interface OrdersService {
  /** Where it listens, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  /** Stops accepting, lets requests in flight finish, releases every lock, closes connections. */
  shutdown(): Promise<void>;
}

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export async function start(options: OrdersOptions): Promise<OrdersService> {
  const {
    redisUrl,
    port = 3000,
    host,
    waitTime = 500,
    workTime = 200,
    drainTimeout = 10_000,
    closeTimeout = 2_000,
    log = console.log,
  } = options;
  const redis = new Redis(redisUrl);
  redis.on('error', (error: Error) => log(`redis: ${error.message}`));
  const client = new LockClient(redis);
  client.on('lockLost', ({ name, code }) => log(`lost ${name} (${code})`));
  client.on('redisError', ({ name, operation, error }) => log(`${operation} ${name}: ${error.message}`));

  /** Pays once, however many requests ask at the same time. */
  async function payOrder(id: string): Promise<Reply> {
    // A handle per request: outside a task each handle is its own owner, so requests exclude
    // each other (one shared handle would be one owner for all of them).
    const order = await client.getLock(`order:${id}`).withLock(
      async ({ signal }) => {
        if ((await redis.hget(`orders:${id}`, 'status')) === 'paid')
          return { id, status: 'paid', charged: false };
        log(`order ${id}: paying`);
        // Rejects with a LockLostError if the lease is lost meanwhile: stop, do not write.
        await sleep(workTime, undefined, { signal });
        await redis.hset(`orders:${id}`, 'status', 'paid', 'paidAt', new Date().toISOString());
        return { id, status: 'paid', charged: true };
      },
      { waitTime },
    );
    return { status: 200, body: order };
  }

  async function route(req: IncomingMessage): Promise<Reply> {
    const { pathname } = new URL(req.url ?? '/', 'http://localhost');
    const [, id, pay = ''] = /^\/orders\/([\w-]{1,64})(\/pay)?$/.exec(pathname) ?? [];
    if (!id) return { status: 404, body: { error: 'not found' } };
    if (pay && req.method === 'POST') return payOrder(id);
    if (!pay && req.method === 'GET') {
      const order = await redis.hgetall(`orders:${id}`);
      return { status: 200, body: { id, status: 'open', ...order } };
    }
    return { status: 405, body: { error: 'method not allowed' } };
  }

  /** The error a request met, as an answer: busy is 409, anything about Redis or shutdown 503. */
  function failure(error: unknown): Reply {
    // 423 Locked says the same in WebDAV; 409 is the code HTTP clients know.
    if (error instanceof LockTimeoutError) {
      return {
        status: 409,
        body: { error: 'the order is busy; try again' },
        headers: { 'Retry-After': '1' },
      };
    }
    if (
      error instanceof LockLostError ||
      error instanceof ClientClosedError ||
      error instanceof RedisUnavailableError
    ) {
      return { status: 503, body: { error: error.message }, headers: { 'Retry-After': '1' } };
    }
    log(`unexpected: ${String(error)}`);
    return { status: 500, body: { error: 'internal error' } };
  }

  let closing: Promise<void> | undefined;
  const inFlight = new Set<Promise<void>>();

  function send(res: ServerResponse, { status, body, headers = {} }: Reply): void {
    // Once shutdown began, no connection is kept alive for another request.
    if (closing) headers.Connection = 'close';
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  const server = createServer((req, res) => {
    if (closing) {
      send(res, { status: 503, body: { error: 'shutting down' } });
      return;
    }
    const handled = route(req).then(
      (reply) => send(res, reply),
      (error: unknown) => send(res, failure(error)),
    );
    inFlight.add(handled);
    void handled.finally(() => inFlight.delete(handled));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  log(`listening on ${url}`);

  async function shutDown(): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    log(`shutting down: ${inFlight.size} request(s) in flight`);
    if (!(await settledWithin([...inFlight], drainTimeout))) log('requests still running; closing anyway');
    // Bodies still running now see their held signal abort and get closeTimeout to wind up; then
    // every lock this client holds is released, so waiters elsewhere take over at once.
    await client.close({ timeout: closeTimeout });
    server.closeAllConnections();
    await closed;
    await redis.quit();
    log('shut down');
  }

  return {
    url,
    shutdown: () => (closing ??= shutDown()),
  };
}

/** Whether every promise settled within `ms`; the timer does not outlive the wait. */
async function settledWithin(promises: Promise<unknown>[], ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  try {
    return await Promise.race([Promise.allSettled(promises).then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The service as a program: settings from the environment, shutdown on SIGTERM and SIGINT. */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const number = (value: string | undefined, fallback: number): number =>
    value === undefined || value === '' ? fallback : Number(value);
  const service = await start({
    redisUrl: env.REDIS_URL ?? 'redis://localhost:6379',
    port: number(env.PORT, 3000),
    host: env.HOST || undefined,
    waitTime: number(env.ORDER_WAIT_MS, 500),
    workTime: number(env.ORDER_WORK_MS, 200),
    drainTimeout: number(env.DRAIN_TIMEOUT_MS, 10_000),
    closeTimeout: number(env.CLOSE_TIMEOUT_MS, 2_000),
  });
  const stop = (signal: NodeJS.Signals): void => {
    console.log(`${signal}: stopping`);
    // No process.exit(): once the server and the connections are closed, nothing keeps the process
    // alive and it ends with code 0. If something still does, that is a leak worth seeing.
    service.shutdown().catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
  };
  // `once`: a second signal meets Node's default handler and ends the process at once.
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

// Run when started as a program (tsx, node), not when imported.
if (basename(process.argv[1] ?? '').replace(/\.[cm]?[jt]s$/, '') === 'http-orders') {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
