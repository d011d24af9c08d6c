import type { Results } from '../bench/report';
import { contentionFigures, jainIndex, median, percentile, type ContentionFigures } from '../bench/stats';
import { judge, TARGETS, verdictTable } from '../bench/targets';

// The benchmark's figures are only as good as their arithmetic: checked here on made-up runs.
const hold = (worker: number, requestedAt: number, acquiredAt: number, releasedAt: number) => ({
  worker,
  requestedAt,
  acquiredAt,
  releasedAt,
});

describe('benchmark figures', () => {
  test('Jain index is 1 for equal shares and 1/n when one worker gets everything', () => {
    expect(jainIndex([5, 5, 5, 5])).toBeCloseTo(1);
    expect(jainIndex([20, 0, 0, 0])).toBeCloseTo(0.25);
  });

  test('a median is the middle value, or the mean of the two middle ones', () => {
    expect(median([5, 1, 4])).toBe(4);
    expect(median([5, 1, 4, 2])).toBe(3);
    expect(median([])).toBeNaN();
  });

  test('percentiles pick from the sorted values', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([5, 1, 4, 2, 3], 99)).toBe(5);
    expect(percentile([], 50)).toBeNaN();
  });

  test('a run served in request order has no overtakes, no overlaps, and gaps only where someone waited', () => {
    const figures = contentionFigures(
      [hold(1, 0, 0, 2), hold(2, 1, 3, 5), hold(1, 4, 6, 8), hold(2, 20, 20, 22)],
      1,
      2,
    );
    expect(figures.acquisitions).toBe(4);
    expect(figures.overtakesPerAcquisition).toBe(0);
    expect(figures.overlaps).toBe(0);
    // 2 -> 3 and 5 -> 6 had a waiter; 8 -> 20 had none and is not an idle gap.
    expect(figures.gapP50).toBe(1);
    expect(figures.waitMax).toBe(2);
  });

  test('a later request served first counts as an overtake, and a second holder as an overlap', () => {
    const figures = contentionFigures([hold(1, 0, 5, 7), hold(2, 1, 2, 4), hold(3, 2, 3, 4.5)], 1, 2);
    expect(figures.overtakesPerAcquisition).toBeCloseTo(2 / 3);
    expect(figures.overlaps).toBe(1);
  });
});

// A run where rlock is `factor` times the figure each target allows (1: exactly at the limit).
function run(factor: number): Results {
  const latency = (p50: number) => ({ p50, p99: p50 * 2 });
  const cost = (serverMicros: number) => ({
    sequentialP50: 0.1,
    redisMicros: serverMicros / 2,
    serverMicros,
    clientMicros: 50,
    commands: 2,
    keysLeft: 0,
  });
  const contended = (perSecond: number, gapP50 = 1, overtakesPerAcquisition = 1) =>
    ({ perSecond, gapP50, overtakesPerAcquisition }) as ContentionFigures;
  const many = (opsPerSecond: number) => ({ locks: 10_000, opsPerSecond });
  return {
    date: '',
    quick: true,
    machine: { cpu: '', cores: 2, memoryGiB: 1, node: '', redis: '', os: '' },
    ping: latency(0.05),
    uncontended: {
      rlock: latency(0.11 * factor),
      'rlock-fair': latency(0.125 * factor),
      redlock: latency(0.2),
      'redis-semaphore': latency(0.1),
      'node-redisson': { failed: 'no figure' },
    },
    pairCost: {
      'set-nx': cost(3),
      rlock: cost(10 * factor),
      'rlock-fair': cost(9),
      redlock: cost(6),
      'redis-semaphore': cost(5),
    },
    contended: {
      rlock: contended(200 / factor),
      // The hand-off gap in PINGs of the run (0.05 ms), and FIFO.
      'rlock-fair': contended(250 / factor, 0.35 * factor, 0.1 * factor),
      redlock: contended(150),
      'redis-semaphore': contended(200),
    },
    idleWaiters: {
      rlock: { commandsPerSecond: 20 * factor, drainMs: 100 },
      'rlock-fair': { commandsPerSecond: 20 * factor, drainMs: 100 },
    },
    manyLocks: {
      rlock: many(20_000 / factor),
      'rlock-fair': many(16_000 / factor),
      redlock: many(10_000),
      'redis-semaphore': many(20_000),
    },
    watchdog: {},
  };
}

describe('hot path targets', () => {
  test('a figure at its limit passes, a worse one fails, each against the best peer that has one', () => {
    const atLimit = judge(run(1));
    expect(atLimit.map((verdict) => verdict.pass)).toEqual(TARGETS.map(() => true));
    expect(atLimit.map((verdict) => verdict.measured)).toEqual(
      [1.25, 1, 7, 0.1, 1.1, 1.25, 2, 1, 0.8, 20, 20].map((v) => expect.closeTo(v, 9)),
    );
    expect(judge(run(1.01)).filter((verdict) => verdict.pass)).toEqual([]);
  });

  test("each contended target shows the floor's figure of the same run, and whether the floor meets it", () => {
    const results = run(1);
    // The direct hand-off: 230 acquisitions/s against the best peer's 200 (1.15x), a gap of 4 PINGs.
    results.contended['handoff-floor'] = {
      perSecond: 230,
      gapP50: 0.2,
      overtakesPerAcquisition: 0,
    } as ContentionFigures;
    results.uncontended['layout-floor'] = { p50: 0.1, p99: 0.2 };
    const byText = new Map(judge(results).map((verdict) => [verdict.target.text, verdict]));
    const fairRate = byText.get('getFairLock: contended acquisitions/s / best peer');
    expect(fairRate).toMatchObject({ pass: true, floor: expect.closeTo(1.15, 9), floorPasses: false });
    expect(byText.get('getFairLock: contended hand-off gap p50, in PINGs')).toMatchObject({
      floor: expect.closeTo(4, 9),
      floorPasses: true,
    });
    expect(byText.get('getLock: uncontended lock + unlock p50 / fastest peer (interleaved)')).toMatchObject({
      floor: expect.closeTo(1, 9),
      floorPasses: true,
    });
    // Targets without a floor (FIFO, idle waiters) show none; a floor that misses the limit says so.
    expect(byText.get('getFairLock: contended overtakes per acquisition')?.floor).toBeUndefined();
    expect(verdictTable(judge(results))).toContain('| ≥ 1.25 | 1.25 | PASS | 1.15 (misses too) |');
  });

  test('a target whose figure is missing fails', () => {
    const results = run(1);
    results.pairCost = undefined;
    results.manyLocks = { rlock: { failed: 'stranded' } };
    const verdicts = judge(results);
    expect(verdicts.filter((verdict) => !verdict.pass).map((verdict) => verdict.measured)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });
});
