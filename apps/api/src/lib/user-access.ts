// Which users a user may see at all (Zulip's can_access_all_users_group, read side): everyone,
// unless the organization limits it to members and the user is a guest. Such a guest sees
// themselves, every bot, and the users they share a channel or a direct-message group with
// (Zulip's check_user_can_access_all_users and get_accessible_user_ids). The audience side of
// the same rule, who hears about a user, is lib/users.ts usersWhoCanAccess.
import { query, RecipientType, Role, statement, type Realm, type User } from '@parley/db';
import { InsufficientPermissionError, JsonableError } from '@parley/errors';
import { groupIdsOfUserSql } from './groups';
import { realmGroupId } from './realm-state';
import { dummyEmail, isGuest } from './users';

/** Zulip's UserProfile.INACCESSIBLE_USER_NAME. */
export const INACCESSIBLE_USER_NAME = 'Unknown user';

/** Zulip's get_avatar_for_inaccessible_user: the static placeholder image. */
export const INACCESSIBLE_USER_AVATAR_URL = '/static/images/unknown-user-avatar.png';

/** For one guest: whether they are in the group can_access_all_users_group names ($2; null
 * is its default, everyone), and if not, the users they share an active subscription with:
 * co-subscribers of channels still active, members of direct-message groups even when
 * deactivated (Zulip's get_accessible_user_ids with include_deactivated_users). */
const accessOfGuest = statement<{ ids: number[] | null }, [number, number | null]>(`
  SELECT CASE WHEN $2::int IS NULL OR $2::int = ANY(${groupIdsOfUserSql('$1')}) THEN NULL
    ELSE ARRAY(
      SELECT DISTINCT other.user_profile_id FROM subscription mine
        JOIN recipient r ON r.id = mine.recipient_id
          AND r.type IN (${RecipientType.STREAM}, ${RecipientType.DIRECT_MESSAGE_GROUP})
        JOIN subscription other ON other.recipient_id = mine.recipient_id AND other.active
      WHERE mine.user_profile_id = $1 AND mine.active
        AND (r.type = ${RecipientType.DIRECT_MESSAGE_GROUP} OR other.is_user_active))
    END AS ids`);

/** The people `viewer` may see besides themselves and bots, or null when they see everyone.
 * No statement for non-guests: the setting may only name everyone or members, and every
 * non-guest is a member. */
export async function accessibleUserIds(
  realm: Realm,
  viewer: Pick<User, 'id' | 'role'>,
): Promise<Set<number> | null> {
  if (!isGuest(viewer)) return null;
  const [row] = await query(accessOfGuest, [
    viewer.id,
    realmGroupId(realm, 'can_access_all_users_group'),
  ]);
  return row!.ids === null ? null : new Set(row!.ids);
}

/** Whether a viewer whose accessibleUserIds are `accessible` may see `target`. */
export function canAccessUser(
  accessible: Set<number> | null,
  viewer: Pick<User, 'id'>,
  target: Pick<User, 'id' | 'isBot'>,
): boolean {
  return (
    accessible === null || target.isBot || target.id === viewer.id || accessible.has(target.id)
  );
}

/** Zulip's access_user_common for reads: a user the viewer may not see is refused as
 * "Insufficient permission". One statement for guests, none for others. */
export async function checkCanAccessUser(
  realm: Realm,
  viewer: Pick<User, 'id' | 'role'>,
  target: Pick<User, 'id' | 'isBot'>,
): Promise<void> {
  if (target.id === viewer.id || target.isBot || !isGuest(viewer)) return;
  if (!canAccessUser(await accessibleUserIds(realm, viewer), viewer, target))
    throw new InsufficientPermissionError();
}

/** For one guest ($1) and some users ($3): when the guest is outside the group
 * can_access_all_users_group names ($2), the humans among them who share no active
 * subscription with the guest, counting only their subscriptions as active users (Zulip's
 * get_inaccessible_users_queryset: a deactivated user is inaccessible even in a shared
 * direct-message group). The guest themselves are never among them. */
const inaccessibleToGuest = statement<{ ids: number[] }, [number, number | null, number[]]>(`
  SELECT CASE WHEN $2::int IS NULL OR $2::int = ANY(${groupIdsOfUserSql('$1')}) THEN '{}'::int[]
    ELSE ARRAY(
      SELECT u.id FROM user_profile u
      WHERE u.id = ANY($3::int[]) AND u.id <> $1 AND NOT u.is_bot
        AND NOT EXISTS (SELECT 1 FROM subscription mine
          JOIN recipient r ON r.id = mine.recipient_id
            AND r.type IN (${RecipientType.STREAM}, ${RecipientType.DIRECT_MESSAGE_GROUP})
          JOIN subscription theirs ON theirs.recipient_id = mine.recipient_id
            AND theirs.user_profile_id = u.id AND theirs.active AND theirs.is_user_active
          WHERE mine.user_profile_id = $1 AND mine.active)
      ORDER BY u.id)
    END AS ids`);

/** Zulip's check_sender_can_access_recipients: a guest may not address a direct message to
 * users they may not access. No statement unless the sender is a guest with someone else
 * among the recipients. */
export async function checkSenderCanAccessRecipients(
  realm: Realm,
  sender: Pick<User, 'id' | 'role'>,
  recipients: Pick<User, 'id' | 'isBot'>[],
): Promise<void> {
  if (!isGuest(sender)) return;
  const others = recipients.filter((user) => user.id !== sender.id && !user.isBot);
  if (others.length === 0) return;
  const [row] = await query(inaccessibleToGuest, [
    sender.id,
    realmGroupId(realm, 'can_access_all_users_group'),
    others.map((user) => user.id),
  ]);
  if (row!.ids.length > 0)
    throw new JsonableError('You do not have permission to access some of the recipients.');
}

/** Zulip's get_data_for_inaccessible_user: the "Unknown user" object that stands in for a user
 * the viewer may not see, in the usual format; only the id (and the dummy address made from
 * it) varies. */
export function presentInaccessibleUser(
  userId: number,
  realm: Pick<Realm, 'stringId'>,
): Record<string, unknown> {
  return {
    user_id: userId,
    delivery_email: null,
    email: dummyEmail({ id: userId }, realm),
    full_name: INACCESSIBLE_USER_NAME,
    date_joined: new Date(0).toISOString(),
    is_active: true,
    is_owner: false,
    is_admin: false,
    is_guest: false,
    is_bot: false,
    role: Role.MEMBER,
    timezone: '',
    avatar_url: INACCESSIBLE_USER_AVATAR_URL,
    avatar_version: 1,
    is_imported_stub: false,
    profile_data: {},
  };
}
