// The outbox relay: every API replica runs one, and the replica holding the lease publishes
// the outbox rows whose own request died between commit and publish (lib/outbox.ts). The
// lease only saves work: publishing is deduplicated, so two relays at once are harmless.
import { randomUUID } from 'node:crypto';
import { getRedis, LuaScript, outboxRelayLeaseKey } from '@parley/events';
import { getLogger } from '@parley/logger';
import { outboxSettled, relayOutbox, SETTLE_ON_STOP_MS } from './lib/outbox';

const RENEW = new LuaScript(
  'renewOutboxRelayLease',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0`,
);

export class OutboxRelay {
  private readonly token = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;

  constructor(private readonly intervalMs = 1000) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.pass().finally(() => (this.running = null));
    }, this.intervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    // This process's published rows: deleted now rather than republished by another relay.
    await outboxSettled(SETTLE_ON_STOP_MS);
  }

  private async pass(): Promise<void> {
    try {
      const held = await RENEW.run(
        getRedis(),
        1,
        outboxRelayLeaseKey,
        this.token,
        this.intervalMs * 5,
      );
      if (held !== 1) return;
      // Drain: a backlog (after an outage) goes out in batches without waiting a tick each.
      while ((await relayOutbox()) > 0);
    } catch (error) {
      getLogger().warn('outbox relay pass failed', { error });
    }
  }
}
