/** Small hand-made SVG bar charts for docs/benchmarks.md: no dependency, readable diffs. */

export interface Bar {
  label: string;
  /** One value per series; NaN draws no bar (a failed cell). */
  values: number[];
}

export interface ChartSpec {
  title: string;
  series: string[];
  bars: Bar[];
  unit: string;
  /** Log scale for values spanning orders of magnitude (latencies). */
  log?: boolean;
}

const COLORS = ['#2f6fdf', '#e07b24', '#7a4fc9', '#3a9d5d'];
const escape = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const format = (value: number): string =>
  value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);

export function barChart(spec: ChartSpec): string {
  const labelWidth = 190;
  const plotWidth = 460;
  const rowHeight = 16;
  const groupGap = 12;
  const top = 52;
  const values = spec.bars
    .flatMap((bar) => bar.values)
    .filter((value) => Number.isFinite(value) && value > 0);
  const max = Math.max(...values, 1e-9);
  const min = spec.log ? Math.min(...values, max) / 2 : 0;
  const scale = (value: number): number =>
    spec.log
      ? (Math.log10(value / min) / Math.log10((max * 1.05) / min)) * plotWidth
      : (value / (max * 1.05)) * plotWidth;
  const groupHeight = spec.series.length * rowHeight + groupGap;
  const height = top + spec.bars.length * groupHeight + 16;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + plotWidth + 90}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${escape(spec.title)}</text>`,
  ];
  spec.series.forEach((name, i) => {
    const x = 10 + i * 150;
    parts.push(`<rect x="${x}" y="30" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/>`);
    parts.push(`<text x="${x + 14}" y="39">${escape(name)}${spec.log ? ' (log scale)' : ''}</text>`);
  });
  spec.bars.forEach((bar, g) => {
    const y0 = top + g * groupHeight;
    parts.push(
      `<text x="${labelWidth - 8}" y="${y0 + (spec.series.length * rowHeight) / 2 + 4}" text-anchor="end">${escape(bar.label)}</text>`,
    );
    bar.values.forEach((value, i) => {
      const y = y0 + i * rowHeight;
      if (!Number.isFinite(value) || value <= 0) {
        parts.push(`<text x="${labelWidth + 4}" y="${y + 12}" fill="#a00">failed</text>`);
        return;
      }
      const width = Math.max(1, scale(value));
      parts.push(
        `<rect x="${labelWidth}" y="${y + 2}" width="${width.toFixed(1)}" height="${rowHeight - 4}" fill="${COLORS[i % COLORS.length]}"/>`,
      );
      parts.push(
        `<text x="${labelWidth + width + 4}" y="${y + 12}">${format(value)} ${escape(spec.unit)}</text>`,
      );
    });
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
