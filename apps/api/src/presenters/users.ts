// User rows → the user object of spec 2.2, as one viewer may see it. The same function feeds
// HTTP responses and event payloads.
import { createHash } from 'node:crypto';
import type { Realm, User } from '@parley/db';
import { isSystemBot } from '../lib/system-bots';
import { canSeeDeliveryEmail, dummyEmail } from '../lib/users';

/** Zulip's UserProfile.INACCESSIBLE_USER_NAME: the name shown for a user the viewer may not
 * access (can_access_all_users_group). */
export const INACCESSIBLE_USER_NAME = 'Unknown user';

/** Zulip's get_avatar_for_inaccessible_user: the static placeholder image. */
export const INACCESSIBLE_USER_AVATAR_URL = '/static/images/unknown-user-avatar.png';

export interface ProfileValue {
  value: string;
  rendered_value?: string;
}

export interface PresentUserOptions {
  /** Null avatar_url for external-provider avatars the viewer can compute (spec 4.5). */
  clientGravatar: boolean;
  /** Custom profile values by field id; absent: profile_data is omitted. */
  profileData?: Map<number, Record<string, ProfileValue>>;
}

function gravatarUrl(hashSource: string, version: number): string {
  const hash = createHash('md5').update(hashSource.toLowerCase()).digest('hex');
  return `https://secure.gravatar.com/avatar/${hash}?d=identicon&version=${version}`;
}

export type AvatarOwner = Pick<
  User,
  'id' | 'deliveryEmail' | 'avatarVersion' | 'avatarSource' | 'avatarHash'
>;

/** The avatar URL a viewer gets (`medium`: Zulip's 500-pixel one, for settings pages). An
 * uploaded avatar ('U') is served here, under the organization's user_avatars/ (relative, as
 * Zulip's local uploads); otherwise Gravatar's, whose URL hashes the address the viewer sees:
 * hidden addresses are never hashed into it (an md5 of an email is not a secret), the dummy
 * address is. */
export function avatarUrl(
  target: AvatarOwner,
  emailVisible: boolean,
  realm: Pick<Realm, 'id' | 'stringId'>,
  { medium = false }: { medium?: boolean } = {},
): string {
  if (target.avatarSource === 'U' && target.avatarHash !== null)
    return `${uploadedAvatarPath(realm.id, target.avatarHash, medium)}?version=${target.avatarVersion}`;
  const url = gravatarUrl(
    emailVisible ? target.deliveryEmail : dummyEmail(target, realm),
    target.avatarVersion,
  );
  return medium ? `${url}&s=500` : url;
}

/** Where an uploaded avatar is served: `/user_avatars/{realm_id}/{hash}.png`, or
 * `{hash}-medium.png` (Zulip's names). */
export function uploadedAvatarPath(realmId: number, hash: string, medium: boolean): string {
  return `/user_avatars/${realmId}/${hash}${medium ? '-medium' : ''}.png`;
}

/** The avatar form of a realm_user update (spec 6) for viewers who can (or cannot) see the
 * user's address (a Gravatar URL hashes the address they see). */
export function avatarPerson(
  target: AvatarOwner,
  emailVisible: boolean,
  realm: Pick<Realm, 'id' | 'stringId'>,
): Record<string, unknown> {
  return {
    user_id: target.id,
    avatar_source: target.avatarSource,
    avatar_url: avatarUrl(target, emailVisible, realm),
    avatar_url_medium: avatarUrl(target, emailVisible, realm, { medium: true }),
    avatar_version: target.avatarVersion,
  };
}

export function presentUser(
  target: User,
  viewer: Pick<User, 'id' | 'role'>,
  realm: Pick<Realm, 'id' | 'stringId'>,
  options: PresentUserOptions,
): Record<string, unknown> {
  return presentUserWithVisibility(target, canSeeDeliveryEmail(viewer, target), realm, options);
}

/** The user object for viewers who can (or cannot) see the real address: events go to groups
 * of viewers, not one viewer. */
export function presentUserWithVisibility(
  target: User,
  visible: boolean,
  realm: Pick<Realm, 'id' | 'stringId'>,
  options: PresentUserOptions,
): Record<string, unknown> {
  const user: Record<string, unknown> = {
    user_id: target.id,
    delivery_email: visible ? target.deliveryEmail : null,
    email: visible ? target.deliveryEmail : dummyEmail(target, realm),
    full_name: target.fullName,
    date_joined: target.dateJoined.toISOString(),
    is_active: target.isActive,
    is_owner: target.role === 100,
    is_admin: target.role <= 200,
    is_guest: target.role === 600,
    is_bot: target.isBot,
    bot_type: target.botType,
    role: target.role,
    timezone: target.timezone,
    avatar_url:
      options.clientGravatar && visible && target.avatarSource === 'G'
        ? null
        : avatarUrl(target, visible, realm),
    avatar_version: target.avatarVersion,
    is_imported_stub: target.isImportedStub,
  };
  if (target.isBot) user.bot_owner_id = target.botOwnerId;
  // Zulip's format_user_row marks its cross-organization bots.
  if (isSystemBot(target)) user.is_system_bot = true;
  if (target.isDeleted) user.is_deleted = true;
  if (!target.isBot && options.profileData)
    user.profile_data = options.profileData.get(target.id) ?? {};
  return user;
}
