// Reading presence (Zulip's zerver/lib/presence.py): the organization's presence in the modern
// form (by user id, two timestamps) or the legacy one (by API email, a status per client), and
// one user's presence for GET /users/{user}/presence.
import { getConfig } from '@parley/config';
import { getPrisma, query, statement, type Realm, type User } from '@parley/db';
import { accessibleUserIds, checkCanAccessUser } from './user-access';
import { canSeeDeliveryEmail, dummyEmail } from './users';

/** Whether can_access_all_users_group limits presence too (a server setting, off by
 * default as in Zulip: a restricted guest still sees every user id's availability). */
export const presenceLimitedByUserAccess = (): boolean =>
  getConfig().CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE;

/** Zulip's OFFLINE_THRESHOLD_SECS and PRESENCE_PING_INTERVAL_SECS (advertised in /register). */
export const OFFLINE_THRESHOLD_SECS = 200;
export const PRESENCE_PING_INTERVAL_SECS = 60;
/** A stored timestamp is rewritten only when the new one is this much newer. */
export const PRESENCE_UPDATE_MIN_FREQ_SECS = 55;
/** Legacy status: "active" when the last activity is this close to the last connection. */
const LEGACY_ACTIVITY_OFFSET_SECS = 70;
/** Without last_update_id, presence older than this many days is left out. */
export const DEFAULT_HISTORY_LIMIT_DAYS = 14;
/** Bound of history_limit_days (any more is all of it; dates must stay representable). */
export const MAX_HISTORY_LIMIT_DAYS = 3650;

export interface PresenceRow {
  user_id: number;
  last_active_time: Date | null;
  last_connected_time: Date | null;
  last_update_id: number;
  date_joined: Date;
  delivery_email: string;
  is_bot: boolean;
  email_address_visibility: number;
}

export interface ModernPresence {
  active_timestamp: number;
  idle_timestamp: number;
}

export interface LegacyClientPresence {
  client: 'website';
  status: 'active' | 'idle';
  timestamp: number;
  pushable: false;
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** Missing timestamps read as the day the user joined, as in Zulip. */
export function modernPresence(
  row: Pick<PresenceRow, 'last_active_time' | 'last_connected_time' | 'date_joined'>,
): ModernPresence {
  return {
    active_timestamp: seconds(row.last_active_time ?? row.date_joined),
    idle_timestamp: seconds(row.last_connected_time ?? row.date_joined),
  };
}

/** Zulip's format_legacy_presence_dict: one status from the two timestamps. */
export function legacyPresence(modern: ModernPresence): LegacyClientPresence {
  const active = modern.active_timestamp + LEGACY_ACTIVITY_OFFSET_SECS >= modern.idle_timestamp;
  return {
    client: 'website',
    status: active ? 'active' : 'idle',
    timestamp: active ? modern.active_timestamp : modern.idle_timestamp,
    pushable: false,
  };
}

export interface PresenceQuery {
  /** Only rows changed after this id (modern clients' incremental polling). */
  lastUpdateId?: number;
  historyLimitDays?: number;
}

// last_update_id is an int8 sequence value, read as a JavaScript number (exact below 2^53).
const PRESENCE_COLUMNS = `up.user_profile_id AS user_id, up.last_active_time,
  up.last_connected_time, up.last_update_id::float8 AS last_update_id, u.date_joined,
  u.delivery_email, u.is_bot, u.email_address_visibility
  FROM user_presence up JOIN user_profile u ON u.id = up.user_profile_id`;
const presenceChangedSince = statement<PresenceRow, [number, number]>(`
  SELECT ${PRESENCE_COLUMNS}
  WHERE up.realm_id = $1 AND up.last_update_id > $2 AND u.is_active AND NOT u.is_bot`);
const presenceConnectedSince = statement<PresenceRow, [number, Date]>(`
  SELECT ${PRESENCE_COLUMNS}
  WHERE up.realm_id = $1 AND up.last_connected_time >= $2 AND u.is_active AND NOT u.is_bot`);

/** Presence of the organization's active humans (Zulip's get_presence_dict_by_realm). */
export async function presenceRows(
  realmId: number,
  { lastUpdateId, historyLimitDays }: PresenceQuery,
): Promise<PresenceRow[]> {
  if (lastUpdateId !== undefined && lastUpdateId > 0)
    return query(presenceChangedSince, [realmId, lastUpdateId]);
  const days = Math.min(historyLimitDays ?? DEFAULT_HISTORY_LIMIT_DAYS, MAX_HISTORY_LIMIT_DAYS);
  if (days === 0) return [];
  const since = new Date(Date.now() - days * 24 * 60 * 60 * 1000);
  return query(presenceConnectedSince, [realmId, since]);
}

/** presenceRows as `viewer` may see them: when presenceLimitedByUserAccess(), a restricted guest gets only
 * the users they may access (Zulip's get_presence_dict_by_realm with requesting_user_profile;
 * bots have no presence). No statement beyond presenceRows unless the viewer is a guest. */
export async function presenceRowsFor(
  realm: Realm,
  viewer: Pick<User, 'id' | 'role'>,
  options: PresenceQuery,
): Promise<PresenceRow[]> {
  const rows = await presenceRows(realm.id, options);
  if (!presenceLimitedByUserAccess()) return rows;
  const accessible = await accessibleUserIds(realm, viewer);
  if (accessible === null) return rows;
  return rows.filter((row) => row.user_id === viewer.id || accessible.has(row.user_id));
}

/** Zulip's get_presence_backend under the same setting: one user's presence is refused as
 * "Insufficient permission" to a guest who may not access them. */
export async function checkCanSeePresenceOf(
  realm: Realm,
  viewer: Pick<User, 'id' | 'role'>,
  target: Pick<User, 'id' | 'isBot'>,
): Promise<void> {
  if (!presenceLimitedByUserAccess()) return;
  await checkCanAccessUser(realm, viewer, target);
}

/** The presence dict one viewer gets: by user id (modern, "slim") or by the API email the
 * viewer sees (legacy). */
export function presentPresences(
  rows: PresenceRow[],
  viewer: Pick<User, 'id' | 'role'>,
  realm: Pick<Realm, 'stringId'>,
  slim: boolean,
): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const row of rows) {
    const modern = modernPresence(row);
    if (slim) {
      result[String(row.user_id)] = modern;
      continue;
    }
    const target = {
      id: row.user_id,
      isBot: row.is_bot,
      emailAddressVisibility: row.email_address_visibility,
    };
    const email = canSeeDeliveryEmail(viewer, target)
      ? row.delivery_email
      : dummyEmail(target, realm);
    const { pushable: _pushable, ...aggregated } = legacyPresence(modern);
    result[email] = { aggregated, website: legacyPresence(modern) };
  }
  return result;
}

/** One user's stored presence, or null when none of their clients ever pinged. */
export async function storedPresence(
  user: Pick<User, 'id' | 'dateJoined'>,
): Promise<ModernPresence | null> {
  const row = await getPrisma().userPresence.findUnique({ where: { userId: user.id } });
  return row
    ? modernPresence({
        last_active_time: row.lastActiveTime,
        last_connected_time: row.lastConnectedTime,
        date_joined: user.dateJoined,
      })
    : null;
}

/** The newest change id among `rows`, else the client's own id, else -1. */
export function lastUpdateIdOf(rows: PresenceRow[], clientLastUpdateId?: number): number {
  if (rows.length === 0) return clientLastUpdateId ?? -1;
  // A loop, not Math.max(...rows): an organization can have more rows than call arguments fit.
  return rows.reduce((max, row) => Math.max(max, Number(row.last_update_id)), -1);
}

export function serverTimestamp(): number {
  return Date.now() / 1000;
}
