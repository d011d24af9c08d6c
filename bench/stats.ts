import type { Acquisition } from './contention-loop';

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Jain's fairness index of the workers' shares: 1 when all got the same, 1/n when one got all. */
export function jainIndex(shares: number[]): number {
  const sum = shares.reduce((a, b) => a + b, 0);
  const squares = shares.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? Number.NaN : (sum * sum) / (shares.length * squares);
}

export interface ContentionFigures {
  acquisitions: number;
  perSecond: number;
  /** Acquisitions per second as a share of 1 / hold time. */
  ofIdeal: number;
  gapP50: number;
  gapP99: number;
  waitP50: number;
  waitP99: number;
  waitMax: number;
  overtakesPerAcquisition: number;
  jain: number;
  overlaps: number;
  /**
   * CPU the workers spent per acquisition (user + system, µs), and Redis' (INFO cpu): the work a
   * hand-off costs, which a machine's speed moves less than the times (absent in older results).
   */
  clientMicrosPerAcquisition?: number;
  redisMicrosPerAcquisition?: number;
}

/**
 * Figures of one contended run. Idle gap: from a release to the next acquisition, counted only when
 * someone was already waiting at that release. Overtake: a pair where the later request got the
 * lock first (request times are taken in the workers, so a few ms of scheduling noise count too).
 */
export function contentionFigures(all: Acquisition[], seconds: number, holdMs: number): ContentionFigures {
  const byAcquired = [...all].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const gaps: number[] = [];
  let overlaps = 0;
  let latestRelease = -Infinity;
  for (let i = 0; i < byAcquired.length; i += 1) {
    const current = byAcquired[i] as Acquisition;
    if (current.acquiredAt < latestRelease) overlaps += 1;
    latestRelease = Math.max(latestRelease, current.releasedAt);
    const next = byAcquired[i + 1];
    if (next && next.requestedAt < current.releasedAt) gaps.push(next.acquiredAt - current.releasedAt);
  }
  const waits = all.map((a) => a.acquiredAt - a.requestedAt);
  const perWorker = new Map<number, number>();
  for (const a of all) perWorker.set(a.worker, (perWorker.get(a.worker) ?? 0) + 1);
  return {
    acquisitions: all.length,
    perSecond: all.length / seconds,
    ofIdeal: all.length / seconds / (1000 / holdMs),
    gapP50: percentile(gaps, 50),
    gapP99: percentile(gaps, 99),
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    waitMax: Math.max(...waits),
    overtakesPerAcquisition: all.length === 0 ? Number.NaN : countOvertakes(all) / all.length,
    jain: jainIndex([...perWorker.values()]),
    overlaps,
  };
}

/** Pairs (a, b) with a requested before b but b acquired before a: inversions, by merge sort. */
function countOvertakes(all: Acquisition[]): number {
  const acquiredInRequestOrder = [...all]
    .sort((a, b) => a.requestedAt - b.requestedAt)
    .map((a) => a.acquiredAt);
  const sort = (values: number[]): [number[], number] => {
    if (values.length < 2) return [values, 0];
    const middle = values.length >> 1;
    const [left, leftCount] = sort(values.slice(0, middle));
    const [right, rightCount] = sort(values.slice(middle));
    const merged: number[] = [];
    let count = leftCount + rightCount;
    let i = 0;
    let j = 0;
    while (i < left.length && j < right.length) {
      if ((left[i] as number) <= (right[j] as number)) merged.push(left[i++] as number);
      else {
        count += left.length - i;
        merged.push(right[j++] as number);
      }
    }
    return [[...merged, ...left.slice(i), ...right.slice(j)], count];
  };
  return sort(acquiredInRequestOrder)[1];
}
