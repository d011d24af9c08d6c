import { contentionFigures, jainIndex, median, percentile } from '../bench/stats';

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
