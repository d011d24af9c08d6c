/**
 * One of the processes of `npm run bench:handoff`: takes the lock, holds it 2 ms, releases it,
 * thinks 1 ms, for `rounds` acquisitions, noting when each step happened (the monotonic clock every
 * process shares): when it asked, when the lock was its own, when it began the release, when its
 * release went out on the socket and came back, and when its subscriber connection read the last
 * message before the lock was its own. Sends them to the parent and exits.
 * argv: <kind: rlock | rlock-fair | floor> <port> <key> <rounds>; RLOCK_BUILD: another build (see
 * adapters.ts). `floor` is the hand-off floor (see handoff-floor.ts), on the same watched connections.
 */
import Redis from 'ioredis';
import { LockClient } from './adapters';
import { cpuMicros, now, sleep } from './clock';
import { openHandoffFloor } from './handoff-floor';
import type { Release } from './adapters';

export interface HandoffTimes {
  requestedAt: number;
  acquiredAt: number;
  /** When the subscriber connection read the last message before acquiredAt (undefined: none). */
  messageAt?: number;
  releaseCalledAt: number;
  releaseSentAt: number;
  releaseAnsweredAt: number;
}

const [kind, port, key, rounds] = process.argv.slice(2);

async function main(): Promise<void> {
  const options = { port: Number(port), host: '127.0.0.1' };
  const redis = new Redis(options);
  const subscriber = new Redis(options);
  // Registered before the client's own listener: it sees each message as it is read.
  let messageAt: number | undefined;
  subscriber.on('message', () => (messageAt = now()));
  subscriber.on('smessage', () => (messageAt = now()));
  let sentAt = 0;
  let watching = false;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    if (watching && (command.name === 'evalsha' || command.name === 'eval')) {
      watching = false;
      sentAt = now();
    }
    return (send as (...args: unknown[]) => unknown)(command, ...rest);
  }) as typeof redis.sendCommand;
  const { lock, close } = await openLock(redis, subscriber);
  const times: HandoffTimes[] = [];
  // Warmed up first: the first acquisitions compile the code they run.
  for (let i = 0; i < 50; i += 1) {
    await lock.lock();
    await lock.unlock();
  }
  const cpuBefore = cpuMicros();
  for (let i = 0; i < Number(rounds); i += 1) {
    messageAt = undefined;
    const requestedAt = now();
    await lock.lock();
    const acquiredAt = now();
    const heard = messageAt;
    await sleep(2);
    watching = true;
    const releaseCalledAt = now();
    await lock.unlock();
    const releaseAnsweredAt = now();
    times.push({
      requestedAt,
      acquiredAt,
      messageAt: heard,
      releaseCalledAt,
      releaseSentAt: sentAt,
      releaseAnsweredAt,
    });
    await sleep(1);
  }
  process.send?.({ times, cpuMicros: cpuMicros() - cpuBefore });
  await close();
  redis.disconnect();
  subscriber.disconnect();
}

interface Subject {
  lock: { lock(): Promise<unknown>; unlock(): Promise<unknown> };
  close(): Promise<void>;
}

/** The lock of `kind` on the watched connections. */
async function openLock(redis: Redis, subscriber: Redis): Promise<Subject> {
  if (kind === 'floor') {
    const floor = await openHandoffFloor(Number(port), { redis, subscriber });
    let release: Release | undefined;
    return {
      lock: {
        lock: async () => (release = await floor.lock(key as string)),
        unlock: () => (release as Release)(),
      },
      close: () => floor.close(),
    };
  }
  const client = new LockClient(redis, { subscriber });
  const lock = kind === 'rlock' ? client.getLock(key as string) : client.getFairLock(key as string);
  return { lock, close: () => client.close() };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
