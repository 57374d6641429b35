// Loopback ports for the servers tests and benchmarks start (replicas, nginx, a Redis of their
// own). A port the OS hands out for listen(0) comes from the ephemeral range, the range every
// outgoing connection's local port comes from too: between freePort() closing it and the child
// binding it (a replica takes a second or two to start), a connection of this process or of a
// replica could take it, and the child died with EADDRINUSE (seen in CI). So ports come from
// below that range, which connections never use; a lock file per port keeps two processes (a
// test run and a benchmark) from picking the same one, and binding the port first skips those
// other programs listen on.
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOCK_DIR = join(tmpdir(), 'parley-ports');
const heldFiles = new Set<string>();
process.on('exit', () => {
  for (const file of heldFiles) {
    try {
      unlinkSync(file);
    } catch {
      // Already gone (a clean-up of the temporary directory).
    }
  }
});

/** The ports to pick from: below Linux's ephemeral range (down to 10000, above the usual
 * services' ports), else above it, else a range below other systems' (49152 and up). */
function candidateRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low !== undefined && low - 10_000 >= 2_000) return [10_000, low - 1];
    if (high !== undefined && 65_535 - high >= 2_000) return [high + 1, 65_535];
  } catch {
    // Not Linux.
  }
  return [20_000, 32_767];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A lock file an owner writes its pid into right after creating it: empty for longer than
 * this, its owner died in between. */
const UNWRITTEN_LOCK_MS = 10_000;

/** Whether the lock file at `file` is held (by a live process, this one included: a port is
 * handed out once). */
function isHeld(file: string): boolean {
  const owner = Number(readFileSync(file, 'utf8'));
  if (Number.isInteger(owner) && owner > 0) return alive(owner);
  return Date.now() - statSync(file).mtimeMs < UNWRITTEN_LOCK_MS;
}

/** Takes the port's lock file for this process; false when another holds it. */
function lock(port: number): boolean {
  const file = join(LOCK_DIR, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      heldFiles.add(file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (!reclaim(file)) return false;
  }
  return false;
}

/** Removes the lock file if its owner is gone; false if it is held, or if another caller is
 * reclaiming it (a directory beside it, created by one caller only, guards the look and the
 * removal together: two callers that both saw the old owner dead would otherwise each remove
 * the other's new lock). */
function reclaim(file: string): boolean {
  const guard = `${file}.reclaiming`;
  try {
    mkdirSync(guard);
  } catch {
    // Another caller is reclaiming it, or died doing so: a guard older than a lock may stay
    // unwritten is stale.
    try {
      if (Date.now() - statSync(guard).mtimeMs > UNWRITTEN_LOCK_MS) rmdirSync(guard);
    } catch {
      // Gone meanwhile.
    }
    return false;
  }
  try {
    if (isHeld(file)) return false;
    unlinkSync(file);
    return true;
  } catch (error) {
    // Released meanwhile (free now), or another user's lock this user may not remove.
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  } finally {
    try {
      rmdirSync(guard);
    } catch {
      // Taken for stale and removed by another caller meanwhile.
    }
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, that no connection will take and that no other caller
 * of freePort (in this process or another) gets until this process exits or releases it. */
export async function freePort(): Promise<number> {
  mkdirSync(LOCK_DIR, { recursive: true });
  // Shared by every user of the machine (as /tmp is), whatever this process's umask.
  try {
    chmodSync(LOCK_DIR, 0o1777);
  } catch {
    // Another user's directory: it was made shared when created.
  }
  const [low, high] = candidateRange();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (lock(port) && (await bindable(port))) return port;
  }
  throw new Error(`no free loopback port between ${low} and ${high}`);
}

/** Gives the port back to other callers of freePort (its server has stopped). */
export function releasePort(port: number): void {
  const file = join(LOCK_DIR, String(port));
  if (!heldFiles.delete(file)) return;
  try {
    unlinkSync(file);
  } catch {
    // Already gone.
  }
}
