// Loopback ports for test and benchmark servers: below the ephemeral range, each handed out
// once while held, given back on release.
import { existsSync, readFileSync } from 'node:fs';
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
    for (const port of ports) {
      expect(port).toBeLessThan(ephemeralLow!);
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
});
