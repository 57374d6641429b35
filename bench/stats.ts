// The statistics every benchmark prints.

/** The p-th percentile of ascending `sorted` (NaN when it is empty). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}
