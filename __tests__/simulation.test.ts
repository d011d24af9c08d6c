import { ALL_FAULTS } from './sim/faults';
import { runSeed, type SeedResult } from './sim/run';
import { KINDS } from './sim/scenario';

/**
 * The deterministic simulation (docs/reliability.md, "Simulation"): the first SEEDS seeds (eight of
 * each kind; about 30 s in one of Jest's workers: CI has little time to spare), every
 * kind of lock and synchronizer in turn, each a schedule of faults against several clients and
 * tasks, checked after every step. A failing seed replays with `npm run sim -- --seed N`.
 */
const SEEDS = 88;
const results: SeedResult[] = [];

describe('deterministic simulation', () => {
  test.each(KINDS.map((kind, index) => ({ kind, index })))(
    '$kind: every check holds under faults',
    async ({ index }) => {
      const failed: string[] = [];
      for (let seed = index === 0 ? KINDS.length : index; seed <= SEEDS; seed += KINDS.length) {
        const result = await runSeed(seed);
        results.push(result);
        if (result.failures.length > 0) {
          failed.push(`seed ${seed} (npm run sim -- --seed ${seed}): ${result.failures[0] as string}`);
        }
      }
      expect(failed).toEqual([]);
    },
    60_000,
  );

  // A simulation that stopped injecting faults, or whose checks stopped looking, would pass vacuously.
  test('the seeds injected every kind of fault and exercised every check', () => {
    expect(results).toHaveLength(SEEDS);
    const faults = new Map<string, number>();
    const figures = new Map<string, number>();
    for (const result of results) {
      for (const [kind, n] of Object.entries(result.faults))
        faults.set(kind, (faults.get(kind) ?? 0) + (n ?? 0));
      for (const [name, n] of Object.entries(result.figures)) figures.set(name, (figures.get(name) ?? 0) + n);
    }
    expect(ALL_FAULTS.filter((kind) => (faults.get(kind) ?? 0) === 0)).toEqual([]);
    const checks = ['wakeChecks', 'fifoChecks', 'tokens', 'calls'];
    expect(checks.filter((name) => (figures.get(name) ?? 0) === 0)).toEqual([]);
    const held = results.filter((result) => (result.outcomes.held ?? result.outcomes.opened ?? 0) > 0);
    expect(held.length).toBeGreaterThan(SEEDS * 0.9);
  });
});
