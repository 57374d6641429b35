// Which users a user may see at all (Zulip's can_access_all_users_group, read side): everyone,
// unless the organization limits it to members and the user is a guest. Such a guest sees
// themselves, every bot, the users they share a channel or a direct-message group with, and
// the users they exchanged a 1:1 direct message with, in either direction (Zulip's
// check_user_can_access_all_users, get_accessible_user_ids and get_inaccessible_user_ids).
// The audience side of the same rule, who hears about a user, is lib/users.ts
// usersWhoCanAccess.
import {
  query,
  RecipientType,
  Role,
  statement,
  SYSTEM_GROUPS,
  type Realm,
  type User,
} from '@parley/db';
import { InsufficientPermissionError, JsonableError } from '@parley/errors';
import type { Notification } from '@parley/events';
import {
  INACCESSIBLE_USER_AVATAR_URL,
  INACCESSIBLE_USER_NAME,
  presentUserWithVisibility,
} from '../presenters/users';
import { directMessagePartnersSql, exchangedDirectMessagesSql } from './direct-message-partners';
import { groupIdsOfUserSql, systemGroupIds } from './groups';
import { realmGroupId } from './realm-state';
import { canSeeDeliveryEmail, dummyEmail, isGuest } from './users';

export { INACCESSIBLE_USER_AVATAR_URL, INACCESSIBLE_USER_NAME };

/** For one guest: whether they are in the group can_access_all_users_group names ($2; null
 * is its default, everyone), and if not, the users they share an active subscription with
 * (co-subscribers of channels still active, members of direct-message groups even when
 * deactivated) and their 1:1 direct-message partners (Zulip's get_accessible_user_ids with
 * include_deactivated_users). */
const accessOfGuest = statement<{ ids: number[] | null }, [number, number | null]>(`
  SELECT CASE WHEN $2::int IS NULL OR $2::int = ANY(${groupIdsOfUserSql('$1')}) THEN NULL
    ELSE ARRAY(
      SELECT other.user_profile_id FROM subscription mine
        JOIN recipient r ON r.id = mine.recipient_id
          AND r.type IN (${RecipientType.STREAM}, ${RecipientType.DIRECT_MESSAGE_GROUP})
        JOIN subscription other ON other.recipient_id = mine.recipient_id AND other.active
      WHERE mine.user_profile_id = $1 AND mine.active
        AND (r.type = ${RecipientType.DIRECT_MESSAGE_GROUP} OR other.is_user_active)
      UNION
      ${directMessagePartnersSql('$1')})
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

/** Each organization's role:everyone group, by organization: system groups are made with
 * their organization and never renamed or deleted, so a process keeps them. */
const everyoneGroupIds = new Map<number, Promise<number | undefined>>();

/** Zulip's user_access_restricted_in_realm: whether can_access_all_users_group names anyone
 * but everyone (it may only name everyone or members). A statement on an organization's first
 * call in this process only: the hot paths (sends to channels with guests, guests' message
 * reads) ask it before reading anything. */
export async function userAccessRestricted(realm: Realm): Promise<boolean> {
  const groupId = realmGroupId(realm, 'can_access_all_users_group');
  if (groupId === null) return false;
  let everyone = everyoneGroupIds.get(realm.id);
  if (!everyone) {
    everyone = systemGroupIds(realm.id).then((groups) => groups.get(SYSTEM_GROUPS.EVERYONE));
    everyoneGroupIds.set(realm.id, everyone);
    // A failed read is not kept: the next call reads again.
    everyone.catch(() => everyoneGroupIds.delete(realm.id));
  }
  return (await everyone) !== groupId;
}

/** For some guests ($1) outside the group can_access_all_users_group names ($2), the humans
 * among some users ($3) each may not access: those who share no active subscription with the
 * guest, counting only their subscriptions as active users, and exchanged no 1:1 direct
 * message with them (Zulip's get_inaccessible_user_ids: a deactivated user is inaccessible
 * even in a shared direct-message group). A guest is never inaccessible to themselves; a guest
 * in the group, or with nobody inaccessible, has no row. */
const inaccessibleToGuests = statement<
  { guestId: number; ids: number[] },
  [number[], number | null, number[]]
>(`
  SELECT guest.id AS "guestId", hidden.ids
  FROM (SELECT id FROM unnest($1::int[]) AS limited(id)
    WHERE $2::int IS NOT NULL AND NOT $2::int = ANY(${groupIdsOfUserSql('limited.id')})
    OFFSET 0) AS guest,
    LATERAL (SELECT ARRAY(
      SELECT u.id FROM user_profile u
      WHERE u.id = ANY($3::int[]) AND u.id <> guest.id AND NOT u.is_bot
        AND NOT EXISTS (SELECT 1 FROM subscription mine
          JOIN recipient r ON r.id = mine.recipient_id
            AND r.type IN (${RecipientType.STREAM}, ${RecipientType.DIRECT_MESSAGE_GROUP})
          JOIN subscription theirs ON theirs.recipient_id = mine.recipient_id
            AND theirs.user_profile_id = u.id AND theirs.active AND theirs.is_user_active
          WHERE mine.user_profile_id = guest.id AND mine.active)
        AND NOT ${exchangedDirectMessagesSql('guest.id', 'u.id')}
      ORDER BY u.id) AS ids) hidden
  WHERE cardinality(hidden.ids) > 0`);

/** For each of `guests` whom can_access_all_users_group limits, the users among `userIds`
 * they may not access (only guests with some). One statement, none without guests or when the
 * organization lets everyone see everyone. */
export async function inaccessibleUsersByGuest(
  realm: Realm,
  guests: Pick<User, 'id' | 'role'>[],
  userIds: number[],
): Promise<Map<number, Set<number>>> {
  const guestIds = [...new Set(guests.filter(isGuest).map((guest) => guest.id))];
  if (guestIds.length === 0 || userIds.length === 0) return new Map();
  if (!(await userAccessRestricted(realm))) return new Map();
  const rows = await query(inaccessibleToGuests, [
    guestIds,
    realmGroupId(realm, 'can_access_all_users_group'),
    [...new Set(userIds)],
  ]);
  return new Map(rows.map((row) => [row.guestId, new Set(row.ids)]));
}

/** Zulip's get_inaccessible_user_ids: which of `userIds` the viewer may not access. No
 * statement unless the viewer is a guest. */
export async function inaccessibleUserIds(
  realm: Realm,
  viewer: Pick<User, 'id' | 'role'>,
  userIds: number[],
): Promise<Set<number>> {
  const others = userIds.filter((id) => id !== viewer.id);
  const found = await inaccessibleUsersByGuest(realm, [viewer], others);
  return found.get(viewer.id) ?? new Set();
}

/** Zulip's check_sender_can_access_recipients: a guest may not address a direct message to
 * users they may not access. No statement unless the sender is a guest with someone else
 * among the recipients. */
export async function checkSenderCanAccessRecipients(
  realm: Realm,
  sender: Pick<User, 'id' | 'role'>,
  recipients: Pick<User, 'id' | 'isBot'>[],
): Promise<void> {
  const others = recipients.filter((user) => user.id !== sender.id && !user.isBot);
  if (
    (
      await inaccessibleUserIds(
        realm,
        sender,
        others.map((user) => user.id),
      )
    ).size > 0
  )
    throw new JsonableError('You do not have permission to access some of the recipients.');
}

/** What a message changes or hides under can_access_all_users_group, for its recipients. */
export interface AccessOnSend {
  /** Limited guests receiving a channel message from a sender they may not access: they see
   * "Unknown user" as its sender (Zulip's user_ids_without_access_to_sender). */
  senderHiddenFrom: ReadonlySet<number>;
  /** realm_user add events, to go out before the message's: a direct message makes its
   * participants accessible to its limited guests, who learn of each one they could not see
   * before (Zulip's get_recipients_for_user_creation_events and notify_created_user: no
   * custom profile data; the address as the guest may see it). */
  accessGrants: Notification[];
}

const NOTHING_ON_SEND: AccessOnSend = { senderHiddenFrom: new Set(), accessGrants: [] };

/** AccessOnSend of a message from `sender` to `viewers` (every recipient, with their role):
 * a channel message, saying whether the sender is subscribed to the channel, or a direct
 * message with its `participants` (its users, sender included). One statement when it may
 * hide a sender or grant access, none otherwise: a subscribed sender shares the channel with
 * every recipient (Zulip asks only about unsubscribed senders), and a guest who sends a direct
 * message was just found to see all its participants. */
export async function accessOnSend(
  realm: Realm,
  sender: User,
  viewers: Pick<User, 'id' | 'role'>[],
  message: { senderSubscribed: boolean } | { participants: User[] },
): Promise<AccessOnSend> {
  const guests = viewers.filter((viewer) => isGuest(viewer) && viewer.id !== sender.id);
  if (guests.length === 0) return NOTHING_ON_SEND;
  if ('senderSubscribed' in message) {
    if (sender.isBot || message.senderSubscribed) return NOTHING_ON_SEND;
    const hidden = await inaccessibleUsersByGuest(realm, guests, [sender.id]);
    return { senderHiddenFrom: new Set(hidden.keys()), accessGrants: [] };
  }
  const { participants } = message;
  // Bots are never hidden, nor anyone from themselves.
  const humans = participants.filter((user) => !user.isBot);
  if (humans.length < 2) return NOTHING_ON_SEND;
  const hidden = await inaccessibleUsersByGuest(
    realm,
    guests,
    humans.map((user) => user.id),
  );
  if (hidden.size === 0) return NOTHING_ON_SEND;
  const accessGrants: Notification[] = [];
  for (const user of participants) {
    const gainedBy = guests.filter((guest) => hidden.get(guest.id)?.has(user.id));
    for (const visible of [true, false]) {
      const users = gainedBy
        .filter((guest) => canSeeDeliveryEmail(guest, user) === visible)
        .map((guest) => guest.id);
      if (users.length === 0) continue;
      const person = presentUserWithVisibility(user, visible, realm, {
        clientGravatar: false,
        profileData: new Map(),
      });
      // The events tier nulls avatar_url for client_gravatar queues, where clients compute it.
      const internal_data = { avatar_gravatar: visible && user.avatarSource === 'G' };
      accessGrants.push({ event: { type: 'realm_user', op: 'add', person, internal_data }, users });
    }
  }
  return { senderHiddenFrom: new Set(), accessGrants };
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
