// People's statuses (Zulip's zerver/lib/user_status.py): the text and emoji shown beside a
// name, with the deprecated `away` (Zulip's alias for presence turned off), as /register's
// user_status, GET /users/{id}/status and user_status events carry them. Only what is set is
// listed: an empty status is an absent one.
import { query, statement, type Realm, type User } from '@parley/db';
import { accessibleUserIds, canAccessUser } from './user-access';

export interface UserStatusInfo {
  away?: true;
  status_text?: string;
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
}

interface StatusRow {
  userId: number;
  isBot: boolean;
  presenceEnabled: boolean;
  statusText: string;
  emojiName: string;
  emojiCode: string;
  reactionType: string;
}

const STATUS_COLUMNS = `s.user_profile_id AS "userId", u.is_bot AS "isBot",
  u.presence_enabled AS "presenceEnabled", s.status_text AS "statusText",
  s.emoji_name AS "emojiName", s.emoji_code AS "emojiCode", s.reaction_type AS "reactionType"`;

// Active people whose status says something (Zulip's get_all_users_status_dict).
const statusesOfRealm = statement<StatusRow, [number]>(
  `SELECT ${STATUS_COLUMNS} FROM user_status s JOIN user_profile u ON u.id = s.user_profile_id
   WHERE u.realm_id = $1 AND u.is_active
     AND NOT (u.presence_enabled AND s.status_text = '' AND s.emoji_name = ''
       AND s.emoji_code = '' AND s.reaction_type = 'unicode_emoji')
   ORDER BY s.user_profile_id`,
);

const statusOfUser = statement<StatusRow, [number]>(
  `SELECT ${STATUS_COLUMNS} FROM user_status s JOIN user_profile u ON u.id = s.user_profile_id
   WHERE s.user_profile_id = $1`,
);

/** Zulip's format_user_status: only the parts that are set. */
function formatUserStatus(row: StatusRow): UserStatusInfo {
  const info: UserStatusInfo = {};
  if (!row.presenceEnabled) info.away = true;
  if (row.statusText !== '') info.status_text = row.statusText;
  if (row.emojiName !== '') {
    info.emoji_name = row.emojiName;
    info.emoji_code = row.emojiCode;
    info.reaction_type = row.reactionType;
  }
  return info;
}

/** /register's user_status: by user id, the statuses of the people `viewer` may see. */
export async function userStatusState(
  realm: Realm,
  viewer: Pick<User, 'id' | 'role'>,
): Promise<Record<string, UserStatusInfo>> {
  const [rows, accessible] = await Promise.all([
    query(statusesOfRealm, [realm.id]),
    accessibleUserIds(realm, viewer),
  ]);
  const state: Record<string, UserStatusInfo> = {};
  for (const row of rows)
    if (canAccessUser(accessible, viewer, { id: row.userId, isBot: row.isBot }))
      state[String(row.userId)] = formatUserStatus(row);
  return state;
}

/** Zulip's get_user_status: one person's status, {} when they never set one. */
export async function userStatusOf(userId: number): Promise<UserStatusInfo> {
  const [row] = await query(statusOfUser, [userId]);
  return row ? formatUserStatus(row) : {};
}

/** Zulip's apply_event for user_status: each part the event carries is set, or dropped when
 * cleared; a person left with nothing leaves the map. */
export function applyUserStatusEvent(
  state: Record<string, unknown>,
  event: Record<string, unknown>,
): void {
  const statuses = state.user_status as Record<string, Record<string, unknown>> | undefined;
  if (!statuses) return;
  const key = String(event.user_id);
  const status = (statuses[key] ??= {});
  if (typeof event.away === 'boolean') {
    if (event.away) status.away = true;
    else delete status.away;
  }
  if (typeof event.status_text === 'string') {
    if (event.status_text === '') delete status.status_text;
    else status.status_text = event.status_text;
  }
  if (typeof event.emoji_name === 'string') {
    for (const part of ['emoji_name', 'emoji_code', 'reaction_type'] as const) {
      if (event.emoji_name === '') delete status[part];
      else status[part] = event[part];
    }
  }
  if (Object.keys(status).length === 0) delete statuses[key];
}
