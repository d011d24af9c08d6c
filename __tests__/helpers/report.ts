/** Prints what a fault test saw, one line per case, so a run shows its counts beside its verdict. */
export function reportFault(name: string, counts: Record<string, number | string>): void {
  const figures = Object.entries(counts)
    .map(([key, value]) => `${key}=${typeof value === 'number' ? Math.round(value * 10) / 10 : value}`)
    .join(' ');
  process.stdout.write(`[fault] ${name}: ${figures}\n`);
}
