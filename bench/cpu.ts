// CPU time of the processes a benchmark drives, read from /proc (Linux): on a small machine
// every process shares the same cores, so time per request says more than latency alone.
import { readdirSync, readFileSync } from 'node:fs';

/** User plus system CPU time of a process, in milliseconds; 0 once it is gone. */
export function cpuTimeMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** Processes whose command line matches (PostgreSQL's backends, redis-server). */
export function pidsMatching(pattern: RegExp): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        return pattern.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
      } catch {
        return false;
      }
    });
}

/** Starts counting CPU time for named groups of processes; `perUnit(n)` gives each group's
 * milliseconds since then, divided by n. A group given as a pattern is listed again at the
 * end, so processes started meanwhile (PostgreSQL backends of new connections) count too. */
export function cpuMeter(groups: Record<string, number[] | RegExp>): {
  perUnit(units: number): Record<string, number>;
} {
  const pidsOf = (group: number[] | RegExp) =>
    group instanceof RegExp ? pidsMatching(group) : group;
  const start = Object.fromEntries(
    Object.entries(groups).map(([name, group]) => [
      name,
      new Map(pidsOf(group).map((pid) => [pid, cpuTimeMs(pid)])),
    ]),
  );
  return {
    perUnit: (units) =>
      Object.fromEntries(
        Object.entries(groups).map(([name, group]) => {
          const before = start[name]!;
          const spent = pidsOf(group).reduce(
            (sum, pid) => sum + cpuTimeMs(pid) - (before.get(pid) ?? 0),
            0,
          );
          return [name, Number((spent / units).toFixed(2))];
        }),
      ),
  };
}
