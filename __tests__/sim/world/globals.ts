import { createRequire } from 'node:module';
import type { Random } from '../random';
import { SimTimer, type VirtualClock } from './clock';
import { SimProcess } from './process';

/**
 * Puts the simulated world behind the globals the library reads: timers, performance.now(), the
 * event loop's utilization, Math.random, the random ids of node:crypto, the wall clock (Date), and
 * what a client tells Redis about its process (host name, pid, script: see ClientRegistry), so that
 * a seed replays the same, byte for byte, in any process on any machine. Imported before the
 * library, because the library binds performance.eventLoopUtilization when it loads. Outside a
 * run every global does what it did before; inside one, what the world says.
 */
export interface ActiveWorld {
  clock: VirtualClock;
  random: Random;
}

// The module objects themselves, which the library's named imports read at each call: a namespace
// import would be a copy whose properties cannot be replaced.
const crypto = createRequire(__filename)('node:crypto') as typeof import('node:crypto');
const os = createRequire(__filename)('node:os') as typeof import('node:os');

/** Virtual start: a plausible epoch, so the server's times (and Date) look like real ones. */
export const EPOCH_MS = 1_767_225_600_000;

const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  clearImmediate: globalThis.clearImmediate,
  now: performance.now.bind(performance),
  loop: performance.eventLoopUtilization.bind(performance),
  random: Math.random,
  randomUUID: crypto.randomUUID,
  randomBytes: crypto.randomBytes,
  Date: globalThis.Date,
  hostname: os.hostname,
  pid: process.pid,
};

/** The real timers, for the driver itself (it must not run on the clock it drives). */
export const realTimers = {
  setImmediate: real.setImmediate,
  setTimeout: real.setTimeout,
  clearTimeout: real.clearTimeout,
};

let active: ActiveWorld | undefined;

type Callback = (...args: unknown[]) => void;
type Loop = { idle: number; active: number; utilization: number };

function clear(timer: unknown): void {
  if (timer instanceof SimTimer) timer.close();
}

const patched = {
  setTimeout: (fn: Callback, ms?: unknown, ...args: unknown[]) =>
    active ? active.clock.setTimer(fn, ms, args, false) : real.setTimeout(fn, ms as number, ...args),
  setInterval: (fn: Callback, ms?: unknown, ...args: unknown[]) =>
    active ? active.clock.setTimer(fn, ms, args, true) : real.setInterval(fn, ms as number, ...args),
  setImmediate: (fn: Callback, ...args: unknown[]) =>
    active ? active.clock.setImmediate(fn, args) : real.setImmediate(fn, ...args),
  clearTimeout: (timer: unknown) =>
    timer instanceof SimTimer ? clear(timer) : real.clearTimeout(timer as NodeJS.Timeout),
  clearInterval: (timer: unknown) =>
    timer instanceof SimTimer ? clear(timer) : real.clearInterval(timer as NodeJS.Timeout),
  clearImmediate: (timer: unknown) =>
    timer instanceof SimTimer ? clear(timer) : real.clearImmediate(timer as NodeJS.Immediate),
};

function loopUtilization(since?: Loop): Loop {
  if (!active) return since ? real.loop(since as never) : real.loop();
  const process = SimProcess.current();
  const now: Loop = process?.loopUtilization() ?? { idle: active.clock.now, active: 0, utilization: 0 };
  if (!since) return now;
  const idle = now.idle - since.idle;
  const busy = now.active - since.active;
  return { idle, active: busy, utilization: idle + busy > 0 ? busy / (idle + busy) : 0 };
}

const g = globalThis as unknown as Record<string, unknown>;
for (const [name, fn] of Object.entries(patched)) g[name] = fn;
Object.defineProperty(performance, 'now', {
  configurable: true,
  writable: true,
  value: () => (active ? active.clock.now : real.now()),
});
Object.defineProperty(performance, 'eventLoopUtilization', {
  configurable: true,
  writable: true,
  value: loopUtilization,
});
Math.random = () => (active ? active.random.float() : real.random());
const cryptoModule = crypto as unknown as Record<string, unknown>;
cryptoModule.randomUUID = () => {
  if (!active) return real.randomUUID();
  const bytes = active.random.bytes(16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
cryptoModule.randomBytes = (size: number, callback?: unknown) => {
  if (!active || callback !== undefined)
    return (real.randomBytes as (...a: unknown[]) => Buffer)(size, callback);
  return active.random.bytes(size);
};

/** The wall clock: the world's epoch plus its virtual time (a Date made of a time is as ever). */
class WorldDate extends real.Date {
  constructor(...args: unknown[]) {
    if (active && args.length === 0) super(EPOCH_MS + active.clock.now);
    else super(...(args as []));
  }

  static override now(): number {
    return active ? EPOCH_MS + active.clock.now : real.Date.now();
  }
}
globalThis.Date = WorldDate as DateConstructor;
(os as unknown as Record<string, unknown>).hostname = () => (active ? 'sim-host' : real.hostname());
Object.defineProperty(process, 'pid', { configurable: true, get: () => (active ? 1 : real.pid) });

/** Runs the world's clock and chance behind the globals until the returned function is called. */
export function activate(world: ActiveWorld): () => void {
  if (active) throw new Error('a simulated world is running already');
  active = world;
  // The script a client names itself by (see ClientRegistry): the same under Jest and npm run sim.
  const script = process.argv[1];
  process.argv[1] = 'sim';
  return () => {
    active = undefined;
    if (script === undefined) process.argv.splice(1, 1);
    else process.argv[1] = script;
  };
}
