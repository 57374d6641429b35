// Each organization's linkifiers, kept in memory: every send renders with them and every
// message fetch computes topic_links from them, while they change about never. Changes arrive
// as "realm_filter:<realm id>" through the same change feed as the auth cache's (migration
// 20261124050000). A read made inside a transaction is not kept (it may see the transaction's
// own uncommitted changes, or an older snapshot); entries also expire after a minute, a
// backstop for whatever notification goes missing.
import { getConfig } from '@parley/config';
import { ChangeFeed, currentTransaction } from '@parley/db';
import type { Linkifier } from '@parley/markdown';

const PREFIX = 'realm_filter:';
const TTL_MS = 60_000;

export class LinkifierCache {
  private readonly entries = new Map<number, { value: readonly Linkifier[]; at: number }>();
  private readonly feed: ChangeFeed;

  constructor(databaseUrl: string) {
    this.feed = new ChangeFeed(databaseUrl, {
      onChange: (change) => {
        if (!change.startsWith(PREFIX)) return false;
        // Concerned even when nothing is cached yet: a read in flight must not be kept.
        this.entries.delete(Number(change.slice(PREFIX.length)));
        return true;
      },
      onLost: () => this.entries.clear(),
    });
  }

  async get(realmId: number, load: () => Promise<Linkifier[]>): Promise<readonly Linkifier[]> {
    const now = Date.now();
    const hit = this.entries.get(realmId);
    if (hit && this.feed.isListening && now - hit.at < TTL_MS) return hit.value;
    const generation = this.feed.generation;
    const loaded = Object.freeze(await load());
    if (this.feed.isListening && generation === this.feed.generation && !currentTransaction())
      this.entries.set(realmId, { value: loaded, at: now });
    return loaded;
  }

  /** Resolves once answers may come from memory (tests, a warm start). */
  listening(): Promise<boolean> {
    return this.feed.listening();
  }

  stop(): Promise<void> {
    return this.feed.stop();
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
