import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis, { type RedisOptions } from 'ioredis';

/**
 * Throwaway redis-server processes on free loopback ports, one per test file or fault test.
 * They keep nothing on disk and are never a server someone else uses.
 */
export interface RedisServer {
  readonly port: number;
  /** The process id of the running server. */
  readonly pid: number | undefined;
  /** A new connection to this server, closed by stop(). */
  connect(options?: RedisOptions): Redis;
  /** Stops the process (data gone) and starts a fresh one on the same port. */
  restart(): Promise<void>;
  /** Kills the process: connections drop and reconnecting fails until up(). */
  down(): Promise<void>;
  /**
   * Starts a process on the same port after down(): a fresh one, or with `keepData` one that loads
   * the data the server last wrote to disk (SAVE), as a restart with persistence does.
   */
  up(options?: { keepData?: boolean }): Promise<void>;
  /** SIGSTOP / SIGCONT: the server stays connected but answers nothing meanwhile. */
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

let checkedBinary = false;

function requireRedisServer(): void {
  if (checkedBinary) return;
  const probe = spawnSync('redis-server', ['--version']);
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'redis-server was not found on PATH; the tests run real Redis servers. Install one ' +
        '(Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis) and run the tests again.',
    );
  }
  checkedBinary = true;
}

/**
 * Ports for test servers: below the kernel's ephemeral range (32768+), where no outgoing
 * connection takes one, and apart for each Jest worker. A server that a test kills and starts
 * again keeps its port meanwhile only by this: another worker's server never lands on it (a client
 * of the killed server would talk to a stranger), nor does a cluster bus port (port + 10000).
 */
const PORT_RANGE_START = 15_000;
const PORTS_PER_PARTITION = 850;
const PARTITIONS = 8;
const partition = (Number(process.env.JEST_WORKER_ID ?? process.pid) - 1) % PARTITIONS;
let nextPortOffset = Math.floor(Math.random() * PORTS_PER_PARTITION);

export async function freePort(): Promise<number> {
  for (let tries = 0; tries < PORTS_PER_PARTITION; tries += 1) {
    nextPortOffset = (nextPortOffset + 1) % PORTS_PER_PARTITION;
    const port = PORT_RANGE_START + partition * PORTS_PER_PARTITION + nextPortOffset;
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
  throw new Error('no free port for a test redis-server');
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Where the servers may write, apart from the project's folder. A replica writes the data a full
 * sync sends it to disk, and every server loads that file when it starts: in the project's folder,
 * one test's replica would hand its replication state and keys to every server started after it.
 * Each port has a file of its own, deleted before a server starts on it, so every start is fresh
 * (except up({ keepData: true }), which loads what the server last saved: a restart with persistence).
 */
const SERVER_DIR = join(tmpdir(), 'rlock-test-servers');

function dumpFile(port: number, dir: string, fresh: boolean): string {
  const file = `dump-${port}.rdb`;
  // Every server gets --dir SERVER_DIR first (a cluster node's own --dir comes later and wins), and
  // redis-server refuses to start when any --dir it reads is missing: on a fresh machine the first
  // server may well be a cluster node.
  mkdirSync(SERVER_DIR, { recursive: true });
  mkdirSync(dir, { recursive: true });
  if (fresh) rmSync(join(dir, file), { force: true });
  return file;
}

/** The folder a server writes in: SERVER_DIR, or the last --dir of its arguments (a cluster node's). */
function dirOf(args: string[]): string {
  const at = args.lastIndexOf('--dir');
  return at >= 0 && at + 1 < args.length ? (args[at + 1] as string) : SERVER_DIR;
}

function launch(
  port: number,
  extraArgs: string[],
  leadingArgs: string[],
  wrapper: string[],
  fresh = true,
): Promise<ChildProcess> {
  const [program, ...args] = [
    ...wrapper,
    'redis-server',
    ...leadingArgs,
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--enable-debug-command',
    'local',
    '--dir',
    SERVER_DIR,
    '--dbfilename',
    dumpFile(port, dirOf([...leadingArgs, ...extraArgs]), fresh),
    '--loglevel',
    'warning',
    ...extraArgs,
  ];
  const child = spawn(program as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const deadline = setTimeout(
      () => fail(new Error(`redis-server on ${port} did not start: ${output}`)),
      10_000,
    );
    const fail = (error: Error): void => {
      clearTimeout(deadline);
      child.kill('SIGKILL');
      reject(error);
    };
    child.on('error', fail);
    child.on('exit', (code) => fail(new Error(`redis-server on ${port} exited with ${code}: ${output}`)));
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Poll PING until the server answers (the log line is quiet at loglevel warning). A raw socket,
    // not ioredis: a failed ioredis probe leaves a 2 s timer behind that keeps the test run alive.
    const poll = async (): Promise<void> => {
      while (!(await answersPing(port))) await new Promise((r) => setTimeout(r, 20));
      clearTimeout(deadline);
      child.removeAllListeners('exit');
      resolve(child);
    };
    void poll();
  });
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (answer: boolean): void => {
      socket.destroy();
      resolveAnswer(answer);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/**
 * What every connection the helpers make is given: ioredis' disconnect() otherwise keeps a ref'd
 * 2 s timer until the socket reports 'close', and a connection that was reconnecting to a killed
 * server holds a socket that closed long ago, so the timer runs out in full. A test file whose
 * last server was killed kept Jest's worker process alive past the end of the run (Jest then
 * kills it: "A worker process has failed to exit gracefully").
 */
export const CLOSE_AT_ONCE = { disconnectTimeout: 0 } as const;

/** Disconnects at once (see CLOSE_AT_ONCE), whatever options the connection was made with. */
export function closeNow(connection: Redis): void {
  connection.disconnect();
  // A connection given its own disconnectTimeout: its socket, if it is still open, goes now.
  const { connector } = connection as unknown as { connector?: { stream?: { destroy(): void } } };
  connector?.stream?.destroy();
}

/**
 * @param leadingArgs arguments before the options, e.g. a config file and --sentinel
 * @param wrapper a program that runs redis-server, with its own arguments (e.g. valgrind's)
 */
export async function startRedis(
  extraArgs: string[] = [],
  leadingArgs: string[] = [],
  wrapper: string[] = [],
): Promise<RedisServer> {
  requireRedisServer();
  const port = await freePort();
  const start = (fresh = true): Promise<ChildProcess> => launch(port, extraArgs, leadingArgs, wrapper, fresh);
  let child = await start();
  const connections: Redis[] = [];
  return {
    port,
    get pid() {
      return child.pid;
    },
    connect(options: RedisOptions = {}) {
      const connection = new Redis({ port, host: '127.0.0.1', ...CLOSE_AT_ONCE, ...options });
      connection.on('error', () => undefined);
      connections.push(connection);
      return connection;
    },
    async restart() {
      await kill(child);
      child = await start();
    },
    async down() {
      await kill(child);
    },
    async up(options = {}) {
      child = await start(options.keepData !== true);
    },
    freeze() {
      child.kill('SIGSTOP');
    },
    thaw() {
      child.kill('SIGCONT');
    },
    async stop() {
      for (const connection of connections.splice(0)) closeNow(connection);
      await kill(child);
    },
  };
}
