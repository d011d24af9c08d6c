/**
 * The performance targets of the hot path, each a figure of one `npm run bench` run judged against a
 * limit. `npm run bench -- --check` measures what they need and exits non-zero when one is missed.
 */
import { HANDOFF_FLOOR, LAYOUT_FLOOR, PEERS, type LibraryName, type Subject } from './adapters';
import type { Results } from './report';
import { ok } from './scenarios';

export interface Target {
  text: string;
  /** 'max': the figure must stay at or below the limit; 'min': at or above it. */
  bound: 'max' | 'min';
  limit: number;
  /** The figure, or undefined when one it is made of is missing (failed, or not run). */
  measure(results: Results): number | undefined;
  /**
   * The same figure for a reference measured in the same run that does the least any lock of its
   * kind must do (a floor, see bench/handoff-floor.ts and bench/layout-floor.ts): when the floor
   * itself misses the limit, no implementation meets it on that run's machine.
   */
  floor?(results: Results): number | undefined;
}

const ratio = (own: number | undefined, other: number): number | undefined =>
  own === undefined || !Number.isFinite(other) ? undefined : own / other;

/** p50 of an uncontended lock + unlock (interleaved), over the fastest peer's. */
function latencyRatio(results: Results, name: Subject): number | undefined {
  const peers = PEERS.map((peer) => ok(results.uncontended[peer])?.p50).filter((v) => v !== undefined);
  return ratio(ok(results.uncontended[name])?.p50, Math.min(...peers));
}

/** Distinct locks per second, over the best peer's. */
function manyLocksRatio(results: Results, name: LibraryName): number | undefined {
  const peers = PEERS.map((peer) => ok(results.manyLocks[peer])?.opsPerSecond).filter((v) => v !== undefined);
  return ratio(ok(results.manyLocks[name])?.opsPerSecond, Math.max(...peers));
}

/** The redis-server process's CPU per uncontended pair (INFO cpu), over the leanest peer's. */
function serverCpuRatio(results: Results, name: Subject): number | undefined {
  const peers = PEERS.map((peer) => ok(results.pairCost?.[peer])?.serverMicros).filter(
    (v): v is number => v !== undefined && Number.isFinite(v),
  );
  return ratio(ok(results.pairCost?.[name])?.serverMicros, Math.min(...peers));
}

/** Contended acquisitions per second (8 processes on one lock), over the best peer's. */
function contendedRatio(results: Results, name: Subject): number | undefined {
  const peers = PEERS.map((peer) => ok(results.contended[peer])?.perSecond).filter((v) => v !== undefined);
  return ratio(ok(results.contended[name])?.perSecond, Math.max(...peers));
}

/** The contended idle gap p50 (a release to the next holder's start), in PINGs of the same run. */
function gapInPings(results: Results, name: Subject): number | undefined {
  return ratio(ok(results.contended[name])?.gapP50, results.ping.p50);
}

export const TARGETS: Target[] = [
  {
    text: 'getFairLock: contended acquisitions/s / best peer',
    bound: 'min',
    limit: 1.25,
    measure: (r) => contendedRatio(r, 'rlock-fair'),
    floor: (r) => contendedRatio(r, HANDOFF_FLOOR),
  },
  {
    text: 'getLock: contended acquisitions/s / best peer',
    bound: 'min',
    limit: 1,
    measure: (r) => contendedRatio(r, 'rlock'),
    floor: (r) => contendedRatio(r, HANDOFF_FLOOR),
  },
  {
    text: 'getFairLock: contended hand-off gap p50, in PINGs',
    bound: 'max',
    limit: 7,
    measure: (r) => gapInPings(r, 'rlock-fair'),
    floor: (r) => gapInPings(r, HANDOFF_FLOOR),
  },
  {
    text: 'getFairLock: contended overtakes per acquisition',
    bound: 'max',
    limit: 0.1,
    measure: (r) => ok(r.contended['rlock-fair'])?.overtakesPerAcquisition,
  },
  {
    text: 'getLock: uncontended lock + unlock p50 / fastest peer (interleaved)',
    bound: 'max',
    limit: 1.1,
    measure: (r) => latencyRatio(r, 'rlock'),
    floor: (r) => latencyRatio(r, LAYOUT_FLOOR),
  },
  {
    text: 'getFairLock: uncontended lock + unlock p50 / fastest peer (interleaved)',
    bound: 'max',
    limit: 1.25,
    measure: (r) => latencyRatio(r, 'rlock-fair'),
  },
  {
    text: 'getLock: Redis server CPU per uncontended pair (INFO cpu) / leanest peer',
    bound: 'max',
    limit: 2,
    measure: (r) => serverCpuRatio(r, 'rlock'),
    floor: (r) => serverCpuRatio(r, LAYOUT_FLOOR),
  },
  {
    text: 'getLock: distinct locks/s from one process / best peer',
    bound: 'min',
    limit: 1,
    measure: (r) => manyLocksRatio(r, 'rlock'),
  },
  {
    text: 'getFairLock: distinct locks/s from one process / best peer',
    bound: 'min',
    limit: 0.8,
    measure: (r) => manyLocksRatio(r, 'rlock-fair'),
  },
  {
    text: 'getLock: Redis commands/s for 200 idle waiters in one client',
    bound: 'max',
    limit: 20,
    measure: (r) => ok(r.idleWaiters.rlock)?.commandsPerSecond,
  },
  {
    text: 'getFairLock: Redis commands/s for 200 idle waiters in one client',
    bound: 'max',
    limit: 20,
    measure: (r) => ok(r.idleWaiters['rlock-fair'])?.commandsPerSecond,
  },
];

export interface Verdict {
  target: Target;
  measured?: number;
  pass: boolean;
  /** The floor's figure in the same run, for a target that has one (see Target.floor). */
  floor?: number;
  /** Whether the floor's figure meets the limit: when it does not, the run's machine rules the target out. */
  floorPasses?: boolean;
}

/** Whether `figure` meets `target`'s limit; a missing figure does not. */
function meets(target: Target, figure: number | undefined): boolean {
  return (
    figure !== undefined &&
    Number.isFinite(figure) &&
    (target.bound === 'max' ? figure <= target.limit : figure >= target.limit)
  );
}

/** Every target judged on one run; a missing figure fails its target. */
export function judge(results: Results, targets: Target[] = TARGETS): Verdict[] {
  return targets.map((target) => {
    const measured = target.measure(results);
    const verdict: Verdict = { target, measured, pass: meets(target, measured) };
    const floor = target.floor?.(results);
    if (floor !== undefined && Number.isFinite(floor)) {
      verdict.floor = floor;
      verdict.floorPasses = meets(target, floor);
    }
    return verdict;
  });
}

/**
 * The verdicts as a table, with the floor's figure where a target has one: a floor that misses
 * the limit too says that this run's machine, not the build, decided the verdict.
 */
export function verdictTable(verdicts: Verdict[]): string {
  const floorCell = ({ floor, floorPasses }: Verdict): string =>
    floor === undefined ? '' : `${floor.toFixed(2)}${floorPasses ? '' : ' (misses too)'}`;
  return [
    '| target | limit | measured | | floor, same run |',
    '|---|---:|---:|---|---:|',
    ...verdicts.map(
      (verdict) =>
        `| ${verdict.target.text} | ${verdict.target.bound === 'max' ? '≤' : '≥'} ${verdict.target.limit} | ${
          verdict.measured === undefined ? 'missing' : verdict.measured.toFixed(2)
        } | ${verdict.pass ? 'PASS' : '**FAIL**'} | ${floorCell(verdict)} |`,
    ),
  ].join('\n');
}
