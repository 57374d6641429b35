// A benchmark or test that dies on an error must not leave the processes it started running
// (an events replica left behind kept its shard leases and took the next benchmark's fan-out).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether a process with this pid still runs: one that exited but was not reaped yet (its
 * parent gone, and init slow to reap, as in some containers) does not. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    // Gone meanwhile, unless there is no /proc to read (not Linux): then the signal said it all.
    return !existsSync('/proc/self/stat');
  }
}

/** Runs a script that starts a long-lived child (ended with it when `ended`), prints the
 * child's pid and dies on an unhandled rejection; returns that pid once the script is gone. */
async function orphanOf(ended: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-end-'));
  try {
    const script = join(dir, 'dies.ts');
    writeFileSync(
      script,
      `import { spawn } from 'node:child_process';
       import { endWithThisProcess } from ${JSON.stringify(join(__dirname, 'stack.ts'))};
       const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
       ${ended ? 'endWithThisProcess(child);' : 'child.unref();'}
       process.stdout.write(String(child.pid));
       void Promise.reject(new Error('the benchmark failed'));`,
    );
    const dying = spawn(process.execPath, ['--import', 'tsx', script], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    dying.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => dying.once('exit', resolve));
    expect(code).toBe(1);
    return Number(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 50 && running(pid); i++) await new Promise((r) => setTimeout(r, 100));
  return !running(pid);
}

it('ends a child with the process that started it, when that process dies on an error', async () => {
  const ended = await orphanOf(true);
  expect(ended).toBeGreaterThan(0);
  expect(await gone(ended)).toBe(true);

  // Without it, the child outlives its parent (what the benchmarks met).
  const left = await orphanOf(false);
  expect(running(left)).toBe(true);
  process.kill(left, 'SIGKILL');
}, 30_000);
