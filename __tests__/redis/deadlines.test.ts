import { Deadlines, type Deadline } from '../../src/redis/deadlines';

/** Resolves after `ms`. */
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('Deadlines (call budgets on one timer per client)', () => {
  test('each deadline expires after its own budget, whatever order they were added in', async () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    const started = performance.now();
    const at: Record<string, number> = {};
    const add = (name: string, budget: number): void => {
      deadlines.add(budget, () => {
        expired.push(name);
        at[name] = performance.now() - started;
      });
    };
    add('long', 120);
    add('short', 30);
    add('middle', 60);
    add('short again', 30);
    await sleep(200);
    expect(expired).toEqual(['short', 'short again', 'middle', 'long']);
    expect(at.short).toBeGreaterThanOrEqual(29);
    expect(at.middle).toBeGreaterThanOrEqual(59);
    expect(at.long).toBeGreaterThanOrEqual(119);
  });

  test('a cancelled deadline never expires, and the others still do', async () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    const first = deadlines.add(20, () => expired.push('first'));
    deadlines.add(40, () => expired.push('second'));
    deadlines.cancel(first);
    await sleep(80);
    expect(expired).toEqual(['second']);
  });

  test('a deadline added from an expiring one is kept', async () => {
    const deadlines = new Deadlines();
    const expired: string[] = [];
    deadlines.add(10, () => {
      expired.push('outer');
      deadlines.add(10, () => expired.push('inner'));
    });
    await sleep(80);
    expect(expired).toEqual(['outer', 'inner']);
  });

  test('cancelling the first, a middle and the last of one budget keeps the others, in order', async () => {
    const deadlines = new Deadlines();
    const expired: number[] = [];
    const made = Array.from({ length: 6 }, (_, i) => deadlines.add(20, () => expired.push(i)));
    for (const i of [0, 2, 5]) deadlines.cancel(made[i] as Deadline);
    deadlines.cancel(made[2] as Deadline); // a second cancel changes nothing
    deadlines.add(20, () => expired.push(6));
    await sleep(80);
    expect(expired).toEqual([1, 3, 4, 6]);
  });
});
