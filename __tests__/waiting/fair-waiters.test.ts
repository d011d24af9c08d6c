import { FairWaiters, type FairWake } from '../../src/waiting/fair-waiters';
import { fairLockKeys } from '../../src/protocol/keys';

// How a client's waiters on one lock share the watch on its holder: pure logic, on fake timers.
describe('FairWaiters: one look at the holder per client and lock', () => {
  const FOREVER = 2 ** 31 - 1;
  let waiters: FairWaiters;

  beforeEach(() => {
    jest.useFakeTimers();
    waiters = new FairWaiters({ keyPrefix: '', handoffTimeout: 1_000 });
  });
  afterEach(() => {
    waiters.close();
    jest.useRealTimers();
  });

  /** Registers `owner` on `name` and puts it to sleep; `woken` says how it woke, once it has. */
  function sleeper(name: string, owner: string): { woken(): FairWake | undefined; release(): void } {
    const wait = waiters.register(name, owner, fairLockKeys(name));
    let wake: FairWake | undefined;
    wait.sleep(FOREVER).then(
      (how) => (wake = how),
      () => undefined,
    );
    return { woken: () => wake, release: () => wait.release() };
  }

  test('when the ttl passes, one sleeping waiter of the lock looks again, not all of them', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map((owner) => sleeper('L', owner));
    const other = sleeper('M', 'a');
    waiters.lookAgainIn('L', 100);
    await jest.advanceTimersByTimeAsync(99);
    expect(a?.woken()).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect([a?.woken(), b?.woken(), c?.woken(), other.woken()]).toEqual([
      'recheck',
      undefined,
      undefined,
      undefined,
    ]);
  });

  test('the latest answer on the lock replaces an earlier one', async () => {
    const a = sleeper('L', 'a');
    waiters.lookAgainIn('L', 100);
    waiters.lookAgainIn('L', 500);
    await jest.advanceTimersByTimeAsync(499);
    expect(a.woken()).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect(a.woken()).toBe('recheck');
  });

  test('a look that falls due while no waiter sleeps is taken by the next one to sleep', async () => {
    const wait = waiters.register('L', 'a', fairLockKeys('L'));
    waiters.lookAgainIn('L', 10);
    await jest.advanceTimersByTimeAsync(10);
    await expect(wait.sleep(FOREVER)).resolves.toBe('recheck');
    // Taken once: the next sleep waits again.
    let wake: FairWake | undefined;
    void wait.sleep(1_000).then((how) => (wake = how));
    await jest.advanceTimersByTimeAsync(999);
    expect(wake).toBeUndefined();
    wait.release();
  });

  test('a waiter told to look that leaves without looking (aborted, closed) passes the look on', async () => {
    const a = sleeper('L', 'a');
    const b = sleeper('L', 'b');
    waiters.lookAgainIn('L', 100);
    await jest.advanceTimersByTimeAsync(100);
    expect([a.woken(), b.woken()]).toEqual(['recheck', undefined]);
    a.release();
    await jest.advanceTimersByTimeAsync(0);
    expect(b.woken()).toBe('recheck');
  });

  test('the look outlives the waiter whose answer set it, and ends with the last waiter', async () => {
    // a's attempt answered, and then its wait ended (it gave up, or took the lock).
    const a = waiters.register('L', 'a', fairLockKeys('L'));
    const b = sleeper('L', 'b');
    waiters.lookAgainIn('L', 100);
    a.release();
    await jest.advanceTimersByTimeAsync(100);
    expect(b.woken()).toBe('recheck');
    waiters.lookAgainIn('L', 100);
    b.release();
    // No look is to come once the last waiter left: the lock's watch goes when its timer fires, and
    // the stall watch (a tick every 250 ms) stops by itself after eight ticks that found nobody.
    await jest.advanceTimersByTimeAsync(8 * 250);
    expect(jest.getTimerCount()).toBe(0);
  });
});

// What a client does with the hand-offs it hears, on the lock's hand-off channel.
describe('FairWaiters: hand-offs heard', () => {
  const FOREVER = 2 ** 31 - 1;
  const HANDOFF_TIMEOUT = 1_000;
  let waiters: FairWaiters;
  let unclaimed: Array<[string, string]>;

  beforeEach(() => {
    unclaimed = [];
    waiters = new FairWaiters({
      keyPrefix: 'app:',
      handoffTimeout: HANDOFF_TIMEOUT,
      unclaimed: (name, ownerId) => unclaimed.push([name, ownerId]),
    });
  });
  afterEach(() => {
    waiters.close();
    jest.useRealTimers();
  });

  function sleeper(name: string, owner: string): { woken(): FairWake | undefined; release(): void } {
    const wait = waiters.register(name, owner, fairLockKeys(name));
    let wake: FairWake | undefined;
    wait.sleep(FOREVER).then(
      (how) => (wake = how),
      () => undefined,
    );
    return { woken: () => wake, release: () => wait.release() };
  }

  test('a grant wakes the waiter it names, and only it', async () => {
    const a = sleeper('L', 'a');
    const b = sleeper('L', 'b');
    waiters.onHandoffMessage('granted\na\napp:L');
    await Promise.resolve();
    expect([a.woken(), b.woken()]).toEqual(['granted', undefined]);
    expect(unclaimed).toEqual([]);
  });

  test('a grant to another waiter has one waiter of the lock look again once the hand-off timeout passes', async () => {
    jest.useFakeTimers();
    const a = sleeper('L', 'a');
    const b = sleeper('L', 'b');
    // The holder's ttl seen last was long: the grant is fresher news.
    waiters.lookAgainIn('L', 30_000);
    waiters.onHandoffMessage('granted\nsomeone-else\napp:L');
    await jest.advanceTimersByTimeAsync(HANDOFF_TIMEOUT - 1);
    expect([a.woken(), b.woken()]).toEqual([undefined, undefined]);
    await jest.advanceTimersByTimeAsync(1);
    expect([a.woken(), b.woken()]).toEqual(['recheck', undefined]);
  });

  test("a grant to one waiter here has the client's other waiter on the lock look again once the hand-off timeout passes", async () => {
    jest.useFakeTimers();
    const a = sleeper('L', 'a');
    const b = sleeper('L', 'b');
    waiters.lookAgainIn('L', 30_000);
    waiters.onHandoffMessage('granted\na\napp:L');
    await jest.advanceTimersByTimeAsync(0);
    expect([a.woken(), b.woken()]).toEqual(['granted', undefined]);
    await jest.advanceTimersByTimeAsync(HANDOFF_TIMEOUT);
    expect(b.woken()).toBe('recheck');
  });

  test('a grant to the only waiter here sets no timer: nobody else is to look again', async () => {
    jest.useFakeTimers();
    const a = sleeper('L', 'a');
    // Its last attempt saw a long ttl: the client's look at the lock is set for then.
    waiters.lookAgainIn('L', 30_000);
    const timersSet = jest.spyOn(global, 'setTimeout');
    waiters.onHandoffMessage('granted\na\napp:L');
    const set = timersSet.mock.calls.length;
    timersSet.mockRestore();
    expect(set).toBe(0);
    await jest.advanceTimersByTimeAsync(0);
    expect(a.woken()).toBe('granted');
  });

  test('a message is read by its first two line breaks: the lock name may hold more; others are ignored', async () => {
    const a = sleeper('L\nM', 'a');
    const b = sleeper('L', 'b');
    for (const malformed of ['granted', 'granted\nb', 'granted\nb\n', 'grant\nb\napp:L', '\nb\napp:L'])
      waiters.onHandoffMessage(malformed);
    await Promise.resolve();
    expect([a.woken(), b.woken()]).toEqual([undefined, undefined]);
    waiters.onHandoffMessage('granted\na\napp:L\nM');
    await Promise.resolve();
    expect([a.woken(), b.woken()]).toEqual(['granted', undefined]);
    expect(unclaimed).toEqual([]);
  });

  test('a grant heard while an attempt was out is taken by the next sleep, whatever the attempt answered', async () => {
    const wait = waiters.register('L', 'a', fairLockKeys('L'));
    // The attempt may have run before the release that sent the grant: its ttl says nothing of it.
    const sentAt = waiters.attemptSent();
    waiters.onHandoffMessage('granted\na\napp:L');
    waiters.markQueued('L', 'a', sentAt);
    await expect(wait.sleep(FOREVER)).resolves.toBe('granted');
    wait.release();
  });

  test('a grant parked before an attempt that found the lock held elsewhere is stale: no sleep takes it', async () => {
    jest.useFakeTimers();
    const wait = waiters.register('L', 'a', fairLockKeys('L'));
    const other = waiters.register('L', 'b', fairLockKeys('L'));
    waiters.onHandoffMessage('granted\na\napp:L');
    waiters.onHandoffMessage('granted\nb\napp:L');
    // a's next attempt (it would have claimed a hand-off still pending for it) answers a ttl.
    const sentAt = waiters.attemptSent();
    waiters.markQueued('L', 'a', sentAt);
    let wake: FairWake | undefined;
    void wait.sleep(500).then((how) => (wake = how));
    await jest.advanceTimersByTimeAsync(499);
    expect(wake).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect(wake).toBe('timeout');
    // Another owner's grant is its own: b's attempts said nothing of it.
    await expect(other.sleep(FOREVER)).resolves.toBe('granted');
    wait.release();
    other.release();
  });

  test('a re-entry or a withdrawn request says nothing of a parked grant (sentAt -1)', async () => {
    const wait = waiters.register('L', 'a', fairLockKeys('L'));
    waiters.onHandoffMessage('granted\na\napp:L');
    waiters.markQueued('L', 'a', -1);
    await expect(wait.sleep(FOREVER)).resolves.toBe('granted');
    wait.release();
  });

  test('the late message of a hand-off an attempt took over makes a later wait of the owner look again, not take it', async () => {
    jest.useFakeTimers();
    const first = waiters.register('L', 'a', fairLockKeys('L'));
    // The attempt took the hand-off over before its message came; that wait ends with the lock.
    waiters.tookHandoff('L', 'a');
    first.release();
    // The owner released, and waits again: the old message comes only now.
    const again = sleeper('L', 'a');
    waiters.onHandoffMessage('granted\na\napp:L');
    await Promise.resolve();
    expect(again.woken()).toBe('recheck');
    expect(unclaimed).toEqual([]);
    again.release();
    // Once: a hand-off to its new place wakes the next wait with the lock.
    const next = sleeper('L', 'a');
    waiters.onHandoffMessage('granted\na\napp:L');
    await Promise.resolve();
    expect(next.woken()).toBe('granted');
    next.release();
    // And only within a hand-off timeout: a message cannot be later than that.
    waiters.tookHandoff('L', 'a');
    await jest.advanceTimersByTimeAsync(HANDOFF_TIMEOUT + 1);
    const later = sleeper('L', 'a');
    waiters.onHandoffMessage('granted\na\napp:L');
    await Promise.resolve();
    expect(later.woken()).toBe('granted');
  });

  test('a hand-off message heard before the attempt that took it over answered is dropped, and no later one is', async () => {
    const wait = waiters.register('L', 'a', fairLockKeys('L'));
    waiters.onHandoffMessage('granted\na\napp:L'); // kept: nobody sleeps
    waiters.tookHandoff('L', 'a');
    let wake: FairWake | undefined;
    void wait.sleep(FOREVER).then((how) => (wake = how));
    await Promise.resolve();
    expect(wake).toBeUndefined();
    waiters.onHandoffMessage('granted\na\napp:L');
    await Promise.resolve();
    expect(wake).toBe('granted');
    wait.release();
  });

  test('a grant for an owner with no waiter here is reported, to be given back', () => {
    sleeper('L', 'a');
    waiters.onHandoffMessage('granted\ngone\napp:L');
    waiters.onHandoffMessage('recheck\ngone\napp:L');
    waiters.onHandoffMessage('granted\ngone\nother-prefix:L');
    expect(unclaimed).toEqual([['L', 'gone']]);
  });

  test('a grant read right after the process stood still makes its waiter look again instead', async () => {
    const a = sleeper('L', 'a');
    // Blocked longer than half the hand-off timeout: the message may have waited all that time.
    const end = Date.now() + HANDOFF_TIMEOUT * 0.6;
    while (Date.now() < end);
    waiters.onHandoffMessage('granted\na\napp:L');
    await Promise.resolve();
    expect(a.woken()).toBe('recheck');
    // Running normally again, the next grant is taken at its word.
    await new Promise((resolve) => setTimeout(resolve, HANDOFF_TIMEOUT / 2));
    const b = sleeper('L', 'b');
    waiters.onHandoffMessage('granted\nb\napp:L');
    await Promise.resolve();
    expect(b.woken()).toBe('granted');
  });
});
