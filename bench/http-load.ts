// Read load for benchmarks: keep-alive clients requesting one URL as fast as it answers.
import { Agent, request } from 'node:http';

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

/** Requests per second `CONNECTIONS` keep-alive clients get from `url` in `SECONDS`. */
export async function throughput(url: string, headers: Record<string, string>): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const get = () =>
    new Promise<number>((resolve, reject) => {
      const req = request(url, { agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  // Warm up (caches, JIT, connections) before counting.
  await Promise.all(Array.from({ length: CONNECTIONS }, () => get()));
  let done = 0;
  const deadline = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < deadline) {
        const status = await get();
        if (status !== 200) throw new Error(`${url} answered ${status}`);
        done++;
      }
    }),
  );
  agent.destroy();
  return done / SECONDS;
}
