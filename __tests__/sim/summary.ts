import type { SeedResult } from './run';

/** The figures of a run of many seeds: what docs/reliability.md quotes. */
export interface Summary {
  seeds: number;
  failed: number;
  failing: number[];
  steps: number;
  virtualMs: number;
  faults: Record<string, number>;
  byKind: Record<string, number>;
  text: string;
}

export function summarize(results: SeedResult[], realMs: number): Summary {
  const faults: Record<string, number> = {};
  const byKind: Record<string, number> = {};
  const outcomes: Record<string, number> = {};
  let steps = 0;
  let virtualMs = 0;
  const failing: number[] = [];
  for (const result of results) {
    steps += result.steps;
    virtualMs += result.virtualMs;
    byKind[result.kind] = (byKind[result.kind] ?? 0) + 1;
    for (const [kind, n] of Object.entries(result.faults)) faults[kind] = (faults[kind] ?? 0) + (n ?? 0);
    for (const [kind, n] of Object.entries(result.outcomes)) outcomes[kind] = (outcomes[kind] ?? 0) + n;
    if (result.failures.length > 0) failing.push(result.seed);
  }
  failing.sort((a, b) => a - b);
  const lines = [
    `${results.length} seeds in ${(realMs / 1000).toFixed(1)} s (${((results.length * 1000) / Math.max(1, realMs)).toFixed(1)} seeds/s), ` +
      `${steps} steps (${Math.round(steps / Math.max(1, results.length))} a seed), ` +
      `${Math.round(virtualMs / 1000)} virtual s`,
    `kinds: ${Object.entries(byKind)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ')}`,
    `faults: ${Object.entries(faults)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ')}`,
    `outcomes: ${Object.entries(outcomes)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ')}`,
    failing.length === 0
      ? 'every check held'
      : `${failing.length} seeds failed: ${failing.slice(0, 50).join(' ')}`,
  ];
  return {
    seeds: results.length,
    failed: failing.length,
    failing,
    steps,
    virtualMs,
    faults,
    byKind,
    text: lines.join('\n'),
  };
}
