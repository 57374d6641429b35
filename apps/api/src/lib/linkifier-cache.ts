// Each organization's linkifiers, kept in memory: every send renders with them and every
// message fetch computes topic_links from them, while they change about never. A change
// reaches every replica at commit by NOTIFY ("realm_filter:<realm id>" on the auth-change
// channel, migration 20261124050000) and the committing process at once (runAction's
// committed changes), as for the auth cache. Only while the listener listens are answers
// taken from memory; a read that began before a change is not kept, nor one made inside a
// transaction (it may see the transaction's own uncommitted changes, or an older snapshot);
// entries also expire after a minute, a backstop for whatever notification goes missing.
import { getConfig } from '@parley/config';
import { ChangeListener, currentTransaction, onCommittedAuthChanges } from '@parley/db';
import type { Linkifier } from '@parley/markdown';

const PREFIX = 'realm_filter:';
const TTL_MS = 60_000;

export class LinkifierCache {
  private readonly entries = new Map<number, { value: readonly Linkifier[]; at: number }>();
  private generation = 0;
  private readonly listener: ChangeListener;
  private readonly forgetLocalChanges: () => void;

  constructor(databaseUrl: string) {
    this.listener = new ChangeListener(databaseUrl, 'parley_auth_change', {
      onNotify: (payload) => this.evict(payload),
      onLost: () => this.clear(),
      onListening: () => this.generation++,
    });
    this.listener.start();
    this.forgetLocalChanges = onCommittedAuthChanges((changes) => {
      for (const change of changes) this.evict(change);
    });
  }

  async get(realmId: number, load: () => Promise<Linkifier[]>): Promise<readonly Linkifier[]> {
    const now = Date.now();
    const hit = this.entries.get(realmId);
    if (hit && this.listener.isListening && now - hit.at < TTL_MS) return hit.value;
    const generation = this.generation;
    const loaded = Object.freeze(await load());
    if (this.listener.isListening && generation === this.generation && !currentTransaction())
      this.entries.set(realmId, { value: loaded, at: now });
    return loaded;
  }

  /** Resolves once answers may come from memory (tests, a warm start). */
  listening(): Promise<boolean> {
    return this.listener.waitUntilListening();
  }

  async stop(): Promise<void> {
    this.forgetLocalChanges();
    await this.listener.stop();
  }

  private evict(payload: string): void {
    if (!payload.startsWith(PREFIX)) return;
    this.generation++;
    this.entries.delete(Number(payload.slice(PREFIX.length)));
  }

  private clear(): void {
    this.generation++;
    this.entries.clear();
  }
}

let cache: LinkifierCache | undefined;

export function linkifierCache(): LinkifierCache {
  cache ??= new LinkifierCache(getConfig().DATABASE_URL);
  return cache;
}

export async function stopLinkifierCache(): Promise<void> {
  const current = cache;
  cache = undefined;
  await current?.stop();
}
