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
  type FencedHeld,
  type LockLostEvent,
  type RedisErrorEvent,
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
  // @ts-expect-error: no such event
  client.on('lockLots', () => undefined);
}

test('the type checks above compile (see npm run typecheck)', () => {
  expect(typeof listen).toBe('function');
});
