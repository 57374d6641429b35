// Loopback ports for test and benchmark servers: below the ephemeral range, each handed out
// once while held, given back on release.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, releasePort } from './ports';

const lockFile = (port: number) => join(tmpdir(), 'parley-ports', String(port));

describe('freePort', () => {
  it('hands out distinct ports below the ephemeral range, locked by this process until released', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
    const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    const [, ephemeralHigh] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    for (const port of ports) {
      expect(port < ephemeralLow! || port > ephemeralHigh!).toBe(true);
      expect(readFileSync(lockFile(port), 'utf8')).toBe(String(process.pid));
    }
    // Free to bind: nothing listens there.
    await new Promise<void>((resolve, reject) => {
      const server = createServer().once('error', reject);
      server.listen(ports[0], '127.0.0.1', () => server.close(() => resolve()));
    });
    for (const port of ports) releasePort(port);
    expect(ports.some((port) => existsSync(lockFile(port)))).toBe(false);
  });

  it('takes over the locks of processes that are gone, not those of live ones', async () => {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    // Every port of the range locked: by a process that exited, or by a live one (this
    // process's parent), so the only ports to be had are the dead one's.
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const live = process.ppid;
    const range = Array.from({ length: low - 10_000 }, (_, index) => 10_000 + index);
    const deadPorts = new Set(range.filter((port) => port % 5 === 0));
    const written: string[] = [];
    for (const port of range) {
      const file = lockFile(port);
      if (existsSync(file)) continue;
      writeFileSync(file, String(deadPorts.has(port) ? dead : live));
      written.push(file);
    }
    try {
      const port = await freePort();
      expect(deadPorts.has(port)).toBe(true);
      expect(readFileSync(lockFile(port), 'utf8')).toBe(String(process.pid));
      releasePort(port);
    } finally {
      for (const file of written) rmSync(file, { force: true });
    }
  });
});
