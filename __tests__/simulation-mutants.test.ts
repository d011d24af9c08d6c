import { MUTANTS } from './sim/mutants';
import { runSeed } from './sim/run';

/**
 * The simulation can fail: each deliberate bug of __tests__/sim/mutants.ts, put into the simulated
 * world (never the shipped code), is caught within the seeds of its kind that its entry states
 * (`within`), by the check meant to catch it; and the seed that caught it passes without the bug.
 * A checker that stops seeing one of them fails here.
 */

describe('deliberate bugs the simulation must catch', () => {
  test.each(MUTANTS.map((mutant) => ({ name: mutant.name, mutant })))(
    '$name',
    async ({ mutant }) => {
      const [kind] = mutant.kinds;
      let caught: { seed: number; failure: string } | undefined;
      for (let seed = 1; seed <= mutant.within && !caught; seed += 1) {
        const result = await runSeed(seed, { kind, mutant });
        const failure = result.failures[0];
        if (failure !== undefined) caught = { seed, failure };
      }
      expect(caught).toBeDefined();
      expect(caught?.failure).toMatch(mutant.caughtBy);
      const control = await runSeed(caught?.seed as number, { kind });
      expect(control.failures).toEqual([]);
    },
    60_000,
  );
});
