// What an API and an events replica cost doing nothing: the CPU milliseconds per second each
// process (and PostgreSQL and Redis, for what the replicas ask of them) spends with no request
// to answer. Timers and idle reads wake every replica of a deployment all day; on a small
// machine each wake-up also delays whatever runs beside it. Prints one JSON line. Not a test:
// run with `pnpm bench:idle` (needs PostgreSQL, Redis and nginx, found or started as for the
// tests).
import { cpus, loadavg } from 'node:os';
import { cpuMeter } from './cpu';
import { prepareBench, stopBench, startBenchStack } from './setup';

/** Startup's own work (module loading, first collections, shard acquisition) settles first. */
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 15_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);

async function main(): Promise<void> {
  const services = await prepareBench();
  const stack = await startBenchStack(services);
  try {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const cpu = cpuMeter({
      api: [stack.api[0]!.process.pid!],
      events: [stack.events[0]!.process.pid!],
      postgres: /^postgres/,
      redis: /redis-server/,
    });
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
    console.log(
      JSON.stringify({
        cores: cpus().length,
        load: loadavg()[0],
        seconds: SECONDS,
        idle_cpu_ms_per_s: cpu.perUnit(SECONDS),
      }),
    );
  } finally {
    await stopBench(stack, services);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
