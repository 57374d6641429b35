// Authentication without queries: the organization of each Host and the user behind each
// address, kept in this process. Every change to a user_profile or realm row reaches every
// replica at its commit (a trigger NOTIFYs `parley_auth_change`, migration
// 20261123030000_auth_change_notify), evicting what it touched; while that notification
// connection is down nothing is served from memory. A read that raced a change is not stored
// (the generation check), and entries expire after a minute regardless. Misses (no such
// organization, no such address) are not kept: creating one notifies nobody.
import { getConfig } from '@parley/config';
import { randomUUID } from 'node:crypto';
import {
  CACHE_CHANGE_CHANNEL,
  ChangeFeed,
  columnsOf,
  query,
  statement,
  type Realm,
  type User,
} from '@parley/db';

const TTL_MS = 60_000;

const notifySync = statement<never, [string]>(`SELECT pg_notify('${CACHE_CHANGE_CHANNEL}', $1)`);

const realmBySubdomain = statement<Realm, [string]>(
  `SELECT ${columnsOf('Realm', 'r')} FROM realm r WHERE r.string_id = $1`,
);
// lower(delivery_email) uses the (realm_id, lower(delivery_email)) unique index and compares
// exactly (see packages/db/src/lookup.ts).
const userByAddress = statement<User, [number, string]>(
  `SELECT ${columnsOf('User', 'u')} FROM user_profile u
   WHERE u.realm_id = $1 AND lower(u.delivery_email) = lower($2)`,
);
/** Beyond this many entries per map the oldest go: a bound on memory (a user row is a
 * kilobyte or two), not a policy. */
const MAX_ENTRIES = 20_000;

interface Entry<T> {
  value: T;
  at: number;
}

class AuthCache {
  private readonly realms = new Map<string, Entry<Realm>>();
  private readonly users = new Map<string, Entry<User>>();
  /** Each cached user's key in `users`. */
  private readonly userKeys = new Map<number, string>();
  private readonly feed: ChangeFeed;
  private readonly syncs = new Map<string, () => void>();
  /** Reads in progress, by map and key, with the generation they began in. */
  private readonly loads = new Map<string, { generation: number; value: Promise<unknown> }>();

  constructor(databaseUrl: string) {
    this.feed = new ChangeFeed(databaseUrl, {
      onChange: (change) => this.evict(change),
      onLost: () => this.clear(),
    });
  }

  /** Waits until every change committed before the call has reached this cache: changes made
   * outside runAction (a test's direct update, another process) arrive by NOTIFY only, and
   * PostgreSQL delivers notifications in commit order, so a marker sent now comes after them. */
  async sync(timeoutMs = 2000): Promise<void> {
    if (!(await this.feed.listening(timeoutMs))) return;
    const token = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<void>((resolve) => {
      this.syncs.set(token, resolve);
      timer = setTimeout(resolve, timeoutMs);
    });
    await query(notifySync, [`sync:${token}`]);
    await seen;
    clearTimeout(timer);
    this.syncs.delete(token);
  }

  async realmBySubdomain(subdomain: string): Promise<Realm | null> {
    return this.cached(this.realms, subdomain, async () => {
      const [realm] = await query(realmBySubdomain, [subdomain]);
      return realm ?? null;
    });
  }

  /** The user (active or not, bot or not) with this delivery address in the organization. */
  async userByEmail(realm: Realm, email: string): Promise<User | null> {
    const address = normalAddress(email);
    const key = userKey(realm.id, address);
    const user = await this.cached(this.users, key, async () => {
      const [found] = await query(userByAddress, [realm.id, address]);
      return found ?? null;
    });
    if (user && this.users.has(key)) {
      // An address change moves the user to another key: the old one goes.
      const previous = this.userKeys.get(user.id);
      if (previous !== undefined && previous !== key) this.users.delete(previous);
      this.userKeys.set(user.id, key);
    }
    return user;
  }

  /** The user with this id in the organization when this process holds them (they
   * authenticated here lately), else null: never a statement, for callers that read the users
   * it lacks together (the recipients of a direct message). As fresh as authentication. */
  peekUserById(realmId: number, id: number): User | null {
    const key = this.userKeys.get(id);
    const user = key === undefined ? null : this.peek(this.users, key);
    return user?.realmId === realmId ? user : null;
  }

  /** `userByEmail`'s user when this process holds it, else null (see peekUserById). */
  peekUserByEmail(realm: Realm, email: string): User | null {
    return this.peek(this.users, userKey(realm.id, normalAddress(email)));
  }

  /** Resolves once the cache may answer from memory (tests, and a warm start). */
  listening(): Promise<boolean> {
    return this.feed.listening();
  }

  stop(): Promise<void> {
    return this.feed.stop();
  }

  private peek<T extends object>(map: Map<string, Entry<T>>, key: string): T | null {
    const hit = map.get(key);
    return hit && this.feed.isListening && Date.now() - hit.at < TTL_MS ? hit.value : null;
  }

  private async cached<T extends object>(
    map: Map<string, Entry<T>>,
    key: string,
    load: () => Promise<T | null>,
  ): Promise<T | null> {
    const fresh = this.peek(map, key);
    if (fresh) return fresh;
    const now = Date.now();
    // Requests that miss the same key at once (every client reconnecting after a restart)
    // share one read, unless a change came after it began.
    const loadKey = `${map === (this.users as Map<string, unknown>) ? 'u' : 'r'}\n${key}`;
    const inFlight = this.loads.get(loadKey);
    if (inFlight && inFlight.generation === this.feed.generation) {
      return (await inFlight.value) as T | null;
    }
    const generation = this.feed.generation;
    const loading = load().then((loaded) => loaded && freeze(loaded));
    this.loads.set(loadKey, { generation, value: loading });
    let value: T | null;
    try {
      value = await loading;
    } finally {
      if (this.loads.get(loadKey)?.value === loading) this.loads.delete(loadKey);
    }
    if (value && this.feed.isListening && generation === this.feed.generation) {
      if (map.size >= MAX_ENTRIES) this.dropOldest(map);
      map.set(key, { value, at: now });
    }
    return value;
  }

  private dropOldest<T extends object>(map: Map<string, Entry<T>>): void {
    const [key, entry] = map.entries().next().value!;
    map.delete(key);
    if ((map as Map<string, unknown>) === this.users) {
      const { id } = entry.value as unknown as User;
      if (this.userKeys.get(id) === key) this.userKeys.delete(id);
    }
  }

  /** Drops what a change touched; returns whether it concerned this cache. */
  private evict(payload: string): boolean {
    const [table, rawId] = payload.split(':');
    if (table === 'sync') {
      this.syncs.get(rawId!)?.();
      return false;
    }
    // The channel also carries what other caches keep (linkifiers: the API's linkifier cache).
    if (table === 'realm_filter') return false;
    const id = Number(rawId);
    // Organizations change rarely: scanning for one's entries is cheaper than an index.
    if (table === 'realm') {
      for (const [key, entry] of this.realms) if (entry.value.id === id) this.realms.delete(key);
      for (const [key, entry] of this.users) if (entry.value.realmId === id) this.users.delete(key);
    } else if (table === 'user_profile') {
      const key = this.userKeys.get(id);
      if (key !== undefined) this.users.delete(key);
      this.userKeys.delete(id);
    } else {
      this.clear();
    }
    return true;
  }

  private clear(): void {
    this.realms.clear();
    this.users.clear();
    this.userKeys.clear();
  }
}

const normalAddress = (email: string) => email.trim().toLowerCase();

/** A user's key in the cache: their organization and normalized address. */
const userKey = (realmId: number, address: string) => `${realmId}\n${address}`;

/** Every request shares the cached object, frozen: a handler that changed a field would
 * change it for every later request, so it fails loudly instead (a copy per request cost
 * memory in each of thousands of parked long-polls). */
function freeze<T extends object>(value: T): T {
  return Object.freeze(value);
}

let cache: AuthCache | undefined;

export function authCache(): AuthCache {
  cache ??= new AuthCache(getConfig().DATABASE_URL);
  return cache;
}

/** The cache if this process has started one: a process that authenticates nobody (the
 * worker delivering a scheduled message) holds no users, and should not open a notification
 * connection just to find that out. */
export function startedAuthCache(): AuthCache | undefined {
  return cache;
}

/** Closes the notification connection (shutdown, and the end of a test file). */
export async function stopAuthCache(): Promise<void> {
  const current = cache;
  cache = undefined;
  await current?.stop();
}
