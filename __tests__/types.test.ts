/**
 * The types users program against. These checks run when the test files are type-checked
 * (`npm run typecheck`, part of CI): a wrong type fails the build, not a test.
 */
import {
  ClientClosedError,
  LockClient,
  LockLostError,
  LockNotHeldError,
  LockNotReplicatedError,
  LockTimeoutError,
  RedisReplyError,
  RedisUnavailableError,
  type AcquiredEvent,
  type FencedHeld,
  type LockKind,
  type LockLostCode,
  type LockLostEvent,
  type NotAcquiredEvent,
  type NotAcquiredReason,
  type RedisErrorEvent,
  type ReleasedEvent,
} from '../src';

/** True when A and B are the same type. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectType<Check extends true>(): Check | undefined {
  return undefined;
}

// Error codes are literal types, so a switch on `error.code` is checked.
expectType<Same<LockNotHeldError['code'], 'ERR_LOCK_NOT_HELD'>>();
expectType<Same<LockTimeoutError['code'], 'ERR_LOCK_TIMEOUT'>>();
expectType<Same<LockNotReplicatedError['code'], 'ERR_LOCK_NOT_REPLICATED'>>();
expectType<Same<LockLostError['code'], 'ERR_LOCK_LOST'>>();
expectType<Same<ClientClosedError['code'], 'ERR_CLIENT_CLOSED'>>();
expectType<Same<RedisUnavailableError['code'], 'ERR_REDIS_UNAVAILABLE'>>();
expectType<Same<RedisReplyError['code'], 'ERR_REDIS_REPLY'>>();

// A fenced lock's withLock always hands a token.
expectType<Same<FencedHeld['token'], number>>();
export function fencedToken(client: LockClient): Promise<number> {
  return client.getFencedLock('x').withLock(({ token }) => token + 1);
}

// Events are typed by name: a misspelt one does not compile, and listeners get their payload's type.
export function listen(client: LockClient): void {
  client.on('lockLost', (event) => {
    const payload: LockLostEvent = event;
    expectType<Same<typeof event, LockLostEvent>>();
    return payload;
  });
  client.on('redisError', (event) => {
    const payload: RedisErrorEvent = event;
    expectType<Same<typeof event, RedisErrorEvent>>();
    return payload;
  });
  client.on('acquired', (event) => {
    expectType<Same<typeof event, AcquiredEvent>>();
    expectType<Same<typeof event.kind, LockKind>>();
    expectType<Same<typeof event.token, number | undefined>>();
    return event.waitMs;
  });
  client.once('notAcquired', (event) => {
    expectType<Same<typeof event, NotAcquiredEvent>>();
    expectType<Same<typeof event.reason, NotAcquiredReason>>();
    expectType<Same<typeof event.error, Error | undefined>>();
    // What went wrong reads as an Error, with no narrowing first.
    return event.error?.message ?? event.reason;
  });
  const onReleased = (event: ReleasedEvent): boolean => event.freed;
  client.on('released', onReleased);
  client.off('released', onReleased);
  client.on('lockLost', (event) => {
    expectType<Same<typeof event.code, LockLostCode>>();
    return event.code;
  });
  // @ts-expect-error: no such event
  client.on('lockLots', () => undefined);
  // @ts-expect-error: no such event
  client.once('aquired', () => undefined);
  // @ts-expect-error: no such event
  client.off('release', () => undefined);
  // @ts-expect-error: a listener of another event's payload
  client.on('released', (event: AcquiredEvent) => event.waitMs);
}

test('the type checks above compile (see npm run typecheck)', () => {
  expect(typeof listen).toBe('function');
});
