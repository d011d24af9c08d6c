import { quorumAtLeast } from '../../src/locks/group/quorum';

/** A promise that settles after `ms` with `value`. */
function after<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

describe('quorumAtLeast (a group lock answering what a quorum of members has)', () => {
  test('a member that holds nothing answering first does not hide the quorum that holds', async () => {
    // Three masters, quorum 2: the one held elsewhere answers 0 first, the two that hold answer 1.
    expect(await quorumAtLeast([after(20, 1), after(30, 1), after(1, 0)], 2)).toBe(1);
    expect(await quorumAtLeast([after(1, 0), after(2, 0), after(30, 1)], 2)).toBe(0);
  });

  test('a quorum that holds answers without waiting for a member that never answers', async () => {
    const never = new Promise<number>(() => undefined);
    expect(await quorumAtLeast([after(1, 1), after(2, 1), never], 2)).toBe(1);
    expect(await quorumAtLeast([after(1, 0), after(2, 0), never], 2)).toBe(0);
    const undecided = quorumAtLeast([after(1, 1), after(2, 0), never], 2);
    const first = await Promise.race([undecided, after(50, 'still waiting')]);
    expect(first).toBe('still waiting');
  });

  test('ttls: the quorum-th largest, with -1 (no expiry) ranked above every number', async () => {
    const rank = (ttl: number): number => (ttl === -1 ? Infinity : ttl);
    expect(await quorumAtLeast([after(1, -2), after(5, 900), after(9, -1)], 2, rank)).toBe(900);
    expect(await quorumAtLeast([after(1, -1), after(5, -1), after(9, 100)], 2, rank)).toBe(-1);
  });

  test('too few answers for a quorum is the error of a member that could not answer', async () => {
    const down = new Error('master down');
    await expect(quorumAtLeast([after(1, 1), Promise.reject(down), Promise.reject(down)], 2)).rejects.toBe(
      down,
    );
    expect(await quorumAtLeast([after(1, 1), Promise.reject(down), after(5, 1)], 2)).toBe(1);
  });
});
