// Users: creation, profile and role changes, deactivation, credentials. check* validates,
// do* writes and queues its events (published after commit).
import {
  AuditLogEvent,
  isUniqueViolation,
  isRoleValue,
  RecipientType,
  Role,
  lockUserRow,
  runAction,
  type ActionContext,
  type Realm,
  type RoleValue,
  type Tx,
  type User,
  Prisma,
  SYSTEM_GROUPS,
} from '@parley/db';
import type { ZulipEvent } from '@parley/events';
import { getLogger } from '@parley/logger';
import {
  CannotDeactivateLastUserError,
  InsufficientPermissionError,
  JsonableError,
} from '@parley/errors';
import { SYSTEM_BOTS } from '../lib/system-bots';
import { addNewUserHistory } from '../lib/new-user-history';
import { generateApiKey, hashPassword } from '../lib/credentials';
import { sendEventOnCommit } from '../lib/events';
import { presentInaccessibleUser } from '../lib/user-access';
import {
  activeUsersByAccessTo,
  canSeeDeliveryEmail,
  checkEmail,
  dummyEmail,
  activeUserIds,
  humanAdminIds,
  isOwner,
  usersWhoCanAccess,
  type Viewer,
} from '../lib/users';
import { loadPermissions } from '../lib/streams';
import { avatarPerson, avatarUrl, presentUserWithVisibility } from '../presenters/users';
import { removeAvatarFiles } from '../lib/avatars';
import { presentBot } from '../presenters/bots';
import { botAudience, botDefaultStreamNames } from '../lib/bots';
import { newUserSettingColumns, USER_SETTINGS, type SettingName } from '../lib/user-settings';
import {
  doAddSubscriptions,
  sendChannelVisibilityChanges,
  sendSubscriberActivityEvents,
} from './subscriptions';
import { doRemoveAllClientDevices } from './client-devices';
import { doForgetDrafts } from './drafts';
import { doExpireInvitesBy } from './invite-revocation';
import { doClearPushDevices } from './push-devices';
import { systemGroupsForRole } from './system-groups';
import {
  doDeleteMessageBatch,
  MESSAGE_DELETION_BATCH_SIZE,
  type DeletedBatch,
} from './bulk-message-deletion';

// Django's EmailValidator accepts more, but every address it accepts has this shape.
/** A local part, then a domain Zulip (Django) accepts: dotted, or "localhost". */

export interface NewUser {
  email: string;
  fullName: string;
  /** null: no password login (bots, or users who will log in another way). */
  password: string | null;
  role: RoleValue;
  isBot?: boolean;
  botType?: number | null;
  botOwnerId?: number | null;
  timezone?: string;
  isImportedStub?: boolean;
  /** Created through the API: joins (date_joined) at the first login. */
  dateJoinedAtFirstLogin?: boolean;
  /** An uploaded picture's files, already stored (actions/avatars prepareAvatar). */
  avatarHash?: string | null;
  /** A bot's default channels (ids) and default_all_public_streams. */
  botDefaults?: {
    sendingStreamId: number | null;
    eventsRegisterStreamId: number | null;
    allPublicStreams: boolean;
  };
}

export function checkFullName(fullName: string): string {
  const trimmed = fullName.trim();
  if (trimmed === '') throw new JsonableError('Name too short!');
  if (trimmed.length > 100) throw new JsonableError('Name too long!');
  // Control characters and the characters Zulip's check_full_name refuses.
  // eslint-disable-next-line no-control-regex
  if (/[\0-\x1f\x7f*`\\>"@]/.test(trimmed)) throw new JsonableError('Invalid characters in name!');
  // Zulip's check_full_name: `|15` at the end would read as a mention's user id.
  if (/\|\d+$/.test(trimmed)) throw new JsonableError('Invalid format!');
  return trimmed;
}

export function checkRole(role: number): RoleValue {
  if (!isRoleValue(role)) throw new JsonableError('Invalid role');
  return role;
}

async function checkEmailAvailable(tx: Tx, realm: Realm, email: string): Promise<void> {
  const existing = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM user_profile
    WHERE realm_id = ${realm.id} AND (lower(email) = lower(${email}) OR lower(delivery_email) = lower(${email}))
    LIMIT 1`;
  if (existing.length > 0) throw new JsonableError('Email is already in use.');
}

/** Zulip's check_bot_name_available: a bot may not share an active user's name. */
export async function checkBotNameAvailable(tx: Tx, realm: Realm, fullName: string) {
  const [taken] = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM user_profile WHERE realm_id = ${realm.id} AND is_active
      AND full_name = ${fullName.trim()} LIMIT 1`;
  if (taken) throw new JsonableError('Name is already in use.');
}

/** Validates a new user against the organization; returns the normalized fields. */
export async function checkCreateUser(tx: Tx, realm: Realm, user: NewUser): Promise<NewUser> {
  const email = checkEmail(user.email);
  await checkEmailAvailable(tx, realm, email);
  const fullName = checkFullName(user.fullName);
  if (realm.requireUniqueNames && !user.isBot) await checkUniqueName(tx, realm.id, null, fullName);
  return { ...user, email, fullName, role: checkRole(user.role) };
}

/** The organization's require_unique_names (read here: callers may hold a cached copy): no
 * other user may have the name, ignoring case (Zulip's check_full_name). */
async function checkUniqueName(
  tx: Tx,
  realmId: number,
  userId: number | null,
  fullName: string,
): Promise<void> {
  const [row] = await tx.$queryRaw<{ taken: boolean }[]>`
    SELECT r.require_unique_names AND EXISTS (SELECT 1 FROM user_profile u
      WHERE u.realm_id = r.id AND u.id <> ${userId ?? -1} AND lower(u.full_name) = lower(${fullName}))
      AS taken
    FROM realm r WHERE r.id = ${realmId}`;
  if (row?.taken) throw new JsonableError('Unique names required in this organization.');
}

/** Hashes a password if one is given; kept out of transactions (scrypt is slow on purpose). */
export async function passwordHashFor(password: string | null): Promise<string | null> {
  if (password === null) return null;
  if (password.length === 0) throw new JsonableError('Password cannot be empty');
  return hashPassword(password);
}

// ---- Events ----------------------------------------------------------------------------------

/** realm_user update with a person form every viewer sees alike. */
export async function sendPersonUpdate(
  ctx: ActionContext,
  target: User,
  person: Record<string, unknown>,
  audience?: Viewer[],
): Promise<void> {
  const viewers = audience ?? (await usersWhoCanAccess(target.realmId, ctx.tx, target));
  sendEventOnCommit(
    ctx,
    { type: 'realm_user', op: 'update', person: { user_id: target.id, ...person } },
    viewers.map((v) => v.id),
  );
}

/** realm_user events whose content depends on whether the viewer sees the real address:
 * one notification per group of viewers. `build` returns null to send that group nothing. */
async function sendByEmailVisibility(
  ctx: ActionContext,
  target: User,
  build: (visible: boolean) => Record<string, unknown> | null,
  viewers?: Viewer[],
): Promise<void> {
  const audience = viewers ?? (await usersWhoCanAccess(target.realmId, ctx.tx, target));
  for (const visible of [true, false]) {
    const event = build(visible);
    const ids = audience
      .filter((viewer) => canSeeDeliveryEmail(viewer, target) === visible)
      .map((v) => v.id);
    if (event) sendEventOnCommit(ctx, event as { type: string }, ids);
  }
}

function sendUserSettingsUpdate(
  ctx: ActionContext,
  user: User,
  property: string,
  value: unknown,
  extra: Record<string, unknown> = {},
): void {
  sendEventOnCommit(ctx, { type: 'user_settings', op: 'update', property, value, ...extra }, [
    user.id,
  ]);
}

/** realm_export_consent to the organization's human administrators: Zulip sends it when a
 * person's consent changes, and when a person is created or reactivated (realm_user events do
 * not carry the setting). */
async function sendExportConsent(
  ctx: ActionContext,
  user: User,
  consented: boolean,
): Promise<void> {
  sendEventOnCommit(
    ctx,
    { type: 'realm_export_consent', user_id: user.id, consented },
    await humanAdminIds(user.realmId, ctx.tx),
  );
}

async function audit(
  ctx: ActionContext,
  user: User,
  eventType: number,
  actingUserId: number | null,
  extraData: Record<string, unknown> = {},
): Promise<void> {
  await ctx.tx.auditLog.create({
    data: {
      realmId: user.realmId,
      actingUserId,
      modifiedUserId: user.id,
      eventType,
      extraData: extraData as object,
    },
  });
}

// ---- Creation -------------------------------------------------------------------------------

/** Writes a user that checkCreateUser accepted, and announces it to everyone who can see it. */
export async function doCreateUser(
  ctx: ActionContext,
  realm: Realm,
  user: NewUser,
  passwordHash: string | null,
  actingUserId: number | null = null,
  /** defaultStreams false: no default channels (an invitation without
   * include_realm_default_subscriptions). history false: the caller subscribes the user to more
   * channels and then gives them their history (addNewUserHistory) itself. */
  options: { defaultStreams?: boolean; history?: boolean } = {},
): Promise<User> {
  const { tx } = ctx;
  // checkCreateUser's lookup can race a concurrent creation; the unique indexes decide.
  const created = await tx.user
    .create({
      data: {
        realmId: realm.id,
        email: user.email,
        deliveryEmail: user.email,
        fullName: user.fullName,
        role: user.role,
        isBot: user.isBot ?? false,
        botType: user.botType ?? null,
        botOwnerId: user.botOwnerId ?? null,
        apiKey: generateApiKey(),
        passwordHash,
        timezone: user.timezone ?? '',
        isImportedStub: user.isImportedStub ?? false,
        dateJoinedAtFirstLogin: user.dateJoinedAtFirstLogin ?? false,
        ...(user.avatarHash ? { avatarSource: 'U', avatarHash: user.avatarHash } : {}),
        ...(user.botDefaults
          ? {
              defaultSendingStreamId: user.botDefaults.sendingStreamId,
              defaultEventsRegisterStreamId: user.botDefaults.eventsRegisterStreamId,
              defaultAllPublicStreams: user.botDefaults.allPublicStreams,
            }
          : {}),
        // The organization's chosen defaults, for people only (Zulip's copy_default_settings).
        ...(user.isBot ? {} : newUserSettingColumns(realm)),
        // Bots' addresses are public (they are how the bot is addressed).
        emailAddressVisibility: user.isBot ? 1 : realm.defaultEmailAddressVisibility,
        defaultLanguage: realm.defaultLanguage,
      },
    })
    .catch((error: unknown) => {
      throw isUniqueViolation(error) ? new JsonableError('Email is already in use.') : error;
    });
  await tx.recipient.create({ data: { type: RecipientType.PERSONAL, typeId: created.id } });
  const joined = await addToSystemGroups(tx, realm.id, created.id, user.role);
  await sendSystemGroupChanges(ctx, created, [], joined);
  await audit(ctx, created, AuditLogEvent.USER_CREATED, actingUserId ?? created.id, {
    role: user.role,
  });
  // Guests who may not see the new user (can_access_all_users_group) get an "Unknown user"
  // in their place (Zulip's notify_created_user).
  const { withAccess, withoutAccess } = await activeUsersByAccessTo(created);
  await sendByEmailVisibility(
    ctx,
    created,
    (visible) => ({
      type: 'realm_user',
      op: 'add',
      person: presentUserWithVisibility(created, visible, realm, {
        clientGravatar: false,
        profileData: new Map(),
      }),
      // The events tier nulls avatar_url for client_gravatar queues, where clients compute it.
      internal_data: { avatar_gravatar: visible && created.avatarSource === 'G' },
    }),
    withAccess,
  );
  if (withoutAccess.length > 0)
    sendEventOnCommit(
      ctx,
      {
        type: 'realm_user',
        op: 'add',
        person: presentInaccessibleUser(created.id, realm),
        // Zulip skips this event for queues with the user_list_incomplete capability; the
        // mark tells the events tier to (apps/events/src/deliver.ts).
        internal_data: { user_list_incomplete: false },
      } as ZulipEvent,
      withoutAccess.map((viewer) => viewer.id),
    );
  // After the realm_user add, so peers learn of the user before seeing them subscribe.
  if (!created.isBot && options.defaultStreams !== false)
    await subscribeToDefaultStreams(ctx, realm, created, actingUserId);
  if (!created.isBot && options.history !== false) await addNewUserHistory(created.id, realm.id);
  if (!created.isBot) await sendExportConsent(ctx, created, created.allowPrivateDataExport);
  if (created.isBot) {
    const recipients = await botAudience(created, tx);
    sendEventOnCommit(
      ctx,
      {
        type: 'realm_bot',
        op: 'add',
        bot: presentBot(created, realm, await botDefaultStreamNames([created], tx)),
      },
      recipients,
    );
  }
  return created;
}

/** New human users join the organization's default channels (bots do not, as in Zulip); the events they would get are moot
 * (they have no queue yet), but existing subscribers learn of them. */
async function subscribeToDefaultStreams(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  actingUserId: number | null,
): Promise<void> {
  const defaults = await ctx.tx.defaultStream.findMany({
    where: { realmId: realm.id, stream: { deactivated: false } },
    select: { stream: true },
  });
  if (defaults.length === 0) return;
  await doAddSubscriptions(
    ctx,
    realm,
    defaults.map(({ stream }) => ({ user, stream })),
    actingUserId,
    { notifySubscribers: false },
  );
}

/** Makes the user a direct member of their role's system groups; returns those groups. */
async function addToSystemGroups(
  tx: Tx,
  realmId: number,
  userId: number,
  role: RoleValue,
): Promise<number[]> {
  // Members join "full members" only once their account is as old as the organization's
  // waiting period (Zulip's update_users_in_full_members_system_group; PATCH /realm applies a
  // new period to everyone).
  const rows = await tx.$queryRaw<{ user_group_id: number }[]>`
    INSERT INTO user_group_membership (user_group_id, user_profile_id)
    SELECT g.id, ${userId}::int FROM user_group g
    WHERE g.realm_id = ${realmId} AND g.is_system_group
      AND g.name = ANY(${systemGroupsForRole(role)}::text[])
      AND (g.name <> ${SYSTEM_GROUPS.FULL_MEMBERS} OR EXISTS (
        SELECT 1 FROM user_profile u JOIN realm r ON r.id = u.realm_id
        WHERE u.id = ${userId}::int
          AND (r.waiting_period_threshold = 0
            OR u.date_joined <= now() - make_interval(days => r.waiting_period_threshold))))
    RETURNING user_group_id`;
  return rows.map((row) => row.user_group_id);
}

/** user_group remove_members, then add_members, for each system group the user left or
 * joined directly, to everyone active (Zulip's do_change_user_role and do_create_user). */
async function sendSystemGroupChanges(
  ctx: ActionContext,
  user: Pick<User, 'id' | 'realmId'>,
  left: number[],
  joined: number[],
): Promise<void> {
  const ascending = (x: number, y: number) => x - y;
  const gone = left.filter((id) => !joined.includes(id)).sort(ascending);
  const added = joined.filter((id) => !left.includes(id)).sort(ascending);
  if (gone.length === 0 && added.length === 0) return;
  const audience = await activeUserIds(user.realmId, ctx.tx);
  for (const [op, groups] of [
    ['remove_members', gone],
    ['add_members', added],
  ] as const)
    for (const groupId of groups)
      sendEventOnCommit(
        ctx,
        { type: 'user_group', op, group_id: groupId, user_ids: [user.id] },
        audience,
      );
}

// ---- Profile ----------------------------------------------------------------------------------

export async function doChangeFullName(
  ctx: ActionContext,
  target: User,
  fullName: string,
  actingUserId: number,
): Promise<void> {
  if (fullName === target.fullName) return;
  if (!target.isBot) await checkUniqueName(ctx.tx, target.realmId, target.id, fullName);
  await ctx.tx.user.update({ where: { id: target.id }, data: { fullName } });
  await audit(ctx, target, AuditLogEvent.USER_FULL_NAME_CHANGED, actingUserId, {
    old_value: target.fullName,
    new_value: fullName,
  });
  await sendPersonUpdate(ctx, target, { full_name: fullName });
  if (target.isBot) await sendBotUpdate(ctx, target, { full_name: fullName });
}

/** Role changes with Zulip's owner rules (spec 3 and 4.1). */
export async function checkChangeRole(
  tx: Tx,
  actor: User,
  target: User,
  role: RoleValue,
): Promise<void> {
  if (role === target.role) return;
  if ((role === Role.OWNER || target.role === Role.OWNER) && !isOwner(actor))
    throw new InsufficientPermissionError();
  if (target.role === Role.GUEST && role <= Role.ADMINISTRATOR) {
    // Spec 4.1: a guest is made a member before becoming an administrator or owner.
    throw new JsonableError('Guests cannot be organization administrators');
  }
  if (target.role === Role.OWNER && (await isLastOwner(tx, target))) {
    throw new JsonableError(
      'The owner permission cannot be removed from the only organization owner.',
    );
  }
}

export async function doChangeRole(
  ctx: ActionContext,
  target: User,
  role: RoleValue,
  actingUserId: number,
): Promise<void> {
  if (role === target.role) return;
  const { tx } = ctx;
  const permsBefore = await loadPermissions(target);
  await tx.user.update({ where: { id: target.id }, data: { role } });
  const systemGroups = await tx.userGroup.findMany({
    where: {
      realmId: target.realmId,
      isSystemGroup: true,
      name: { in: Object.values(SYSTEM_GROUPS) },
    },
    select: { id: true },
  });
  const left = await tx.$queryRaw<{ user_group_id: number }[]>`
    DELETE FROM user_group_membership
    WHERE user_profile_id = ${target.id}
      AND user_group_id = ANY(${systemGroups.map((g) => g.id)}::int[])
    RETURNING user_group_id`;
  const joined = await addToSystemGroups(tx, target.realmId, target.id, role);
  await sendChannelVisibilityChanges(ctx, permsBefore, await loadPermissions({ ...target, role }));
  await audit(ctx, target, AuditLogEvent.USER_ROLE_CHANGED, actingUserId, {
    old_value: target.role,
    new_value: role,
  });
  // Only the person's role changes for others; what the user may now see of others (email
  // visibility is role-based) reaches their client with its next registration.
  await sendPersonUpdate(ctx, target, { role });
  // After the role's update, as Zulip's do_change_user_role.
  await sendSystemGroupChanges(
    ctx,
    target,
    left.map((row) => row.user_group_id),
    joined,
  );
}

/** Whether the user is the organization's only (human) owner: a bot with the owner role
 * never is (Zulip's patch_bot_backend demotes one freely). */
async function isLastOwner(tx: Tx, user: User): Promise<boolean> {
  if (user.isBot) return false;
  const owners = await tx.user.count({
    where: { realmId: user.realmId, role: Role.OWNER, isActive: true, isBot: false },
  });
  return user.role === Role.OWNER && owners <= 1;
}

export async function checkChangeEmail(
  tx: Tx,
  actor: User,
  target: User,
  newEmail: string,
): Promise<string> {
  if (!(isOwner(actor) && actor.canChangeUserEmails)) throw new InsufficientPermissionError();
  const email = checkEmail(newEmail);
  if (email.toLowerCase() !== target.deliveryEmail.toLowerCase()) {
    const realm = await tx.realm.findUniqueOrThrow({ where: { id: target.realmId } });
    await checkEmailAvailable(tx, realm, email);
  }
  return email;
}

export async function doChangeEmail(
  ctx: ActionContext,
  realm: Realm,
  target: User,
  email: string,
  actingUserId: number,
): Promise<void> {
  if (email === target.deliveryEmail) return;
  await ctx.tx.user
    .update({ where: { id: target.id }, data: { email, deliveryEmail: email } })
    .catch((error: unknown) => {
      throw isUniqueViolation(error) ? new JsonableError('Email is already in use.') : error;
    });
  await audit(ctx, target, AuditLogEvent.USER_EMAIL_CHANGED, actingUserId, {
    old_value: target.deliveryEmail,
    new_value: email,
  });
  // Viewers who see the real address get both forms; the others keep seeing the dummy address.
  await sendByEmailVisibility(ctx, target, (visible) =>
    visible
      ? { type: 'realm_user', op: 'update', person: { user_id: target.id, delivery_email: email } }
      : null,
  );
  await sendByEmailVisibility(ctx, target, (visible) =>
    visible
      ? { type: 'realm_user', op: 'update', person: { user_id: target.id, new_email: email } }
      : null,
  );
  // The avatar URL hashes the address (Zulip's notify_avatar_url_change).
  const changed = { ...target, deliveryEmail: email };
  await sendByEmailVisibility(ctx, target, (visible) =>
    visible
      ? { type: 'realm_user', op: 'update', person: avatarPerson(changed, true, realm) }
      : null,
  );
}

/** Zulip's do_change_avatar_fields: the avatar's source ('U' uploaded, with the random name of
 * its files; 'G' Gravatar) and a new version, audited, and told with the avatar form of
 * realm_user update to those who can access the user (the Gravatar URL hashes the address each
 * viewer sees), and as realm_bot update for a bot. */
export async function doChangeAvatarFields(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  source: 'G' | 'U',
  hash: string | null,
  actingUserId: number,
): Promise<User> {
  const updated = await ctx.tx.user.update({
    where: { id: user.id },
    data: { avatarSource: source, avatarHash: hash, avatarVersion: { increment: 1 } },
  });
  await audit(ctx, user, AuditLogEvent.USER_AVATAR_SOURCE_CHANGED, actingUserId, {
    avatar_source: source,
  });
  // An uploaded avatar's URL is the same for every viewer.
  if (source === 'U') await sendPersonUpdate(ctx, updated, avatarPerson(updated, true, realm));
  else
    await sendByEmailVisibility(ctx, updated, (visible) => ({
      type: 'realm_user',
      op: 'update',
      person: avatarPerson(updated, visible, realm),
    }));
  if (updated.isBot)
    await sendBotUpdate(ctx, updated, { avatar_url: avatarUrl(updated, true, realm) });
  return updated;
}

// ---- Settings -------------------------------------------------------------------------------

export async function doChangeTimezone(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  timezone: string,
): Promise<void> {
  if (timezone === user.timezone) return;
  await ctx.tx.user.update({ where: { id: user.id }, data: { timezone } });
  sendUserSettingsUpdate(ctx, user, 'timezone', timezone);
  // The deprecated `email` field of this form carries the API email each group sees.
  await sendByEmailVisibility(ctx, user, (visible) => ({
    type: 'realm_user',
    op: 'update',
    person: {
      user_id: user.id,
      email: visible ? user.deliveryEmail : dummyEmail(user, realm),
      timezone,
    },
  }));
}

export async function doChangeEmailVisibility(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  visibility: number,
): Promise<void> {
  if (visibility === user.emailAddressVisibility) return;
  const viewers = await usersWhoCanAccess(user.realmId, ctx.tx, user);
  const updated = { ...user, emailAddressVisibility: visibility };
  await ctx.tx.user.update({
    where: { id: user.id },
    data: { emailAddressVisibility: visibility },
  });
  sendUserSettingsUpdate(ctx, user, 'email_address_visibility', visibility);
  // Viewers who gained access learn the address, those who lost it get null (spec 6); for
  // both the API email changes (new_email), and with it the avatar URL, which hashes it
  // (Zulip's send_user_email_update_event and notify_avatar_url_change).
  const changed = viewers.filter(
    (viewer) => canSeeDeliveryEmail(viewer, user) !== canSeeDeliveryEmail(viewer, updated),
  );
  const person = (fields: Record<string, unknown>) => ({
    type: 'realm_user',
    op: 'update',
    person: { user_id: user.id, ...fields },
  });
  await sendByEmailVisibility(
    ctx,
    updated,
    (visible) => person({ delivery_email: visible ? user.deliveryEmail : null }),
    changed,
  );
  await sendByEmailVisibility(
    ctx,
    updated,
    (visible) => person({ new_email: visible ? user.deliveryEmail : dummyEmail(user, realm) }),
    changed,
  );
  await sendByEmailVisibility(
    ctx,
    updated,
    (visible) => person(avatarPerson(user, visible, realm)),
    changed,
  );
}

/** A setting of the catalogue without side effects of its own: its column changes and the
 * user's clients hear of it. */
export async function doChangeSetting(
  ctx: ActionContext,
  user: User,
  property: SettingName,
  value: string | number | boolean,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const column = USER_SETTINGS[property].column;
  if (user[column] === value) return;
  await ctx.tx.user.update({ where: { id: user.id }, data: { [column]: value } });
  // Zulip forgets the stored drafts when their synchronization is turned off.
  if (property === 'enable_drafts_synchronization' && value === false)
    await doForgetDrafts(ctx, user.id);
  sendUserSettingsUpdate(ctx, user, property, value, extra);
  if (property === 'allow_private_data_export')
    await sendExportConsent(ctx, user, value as boolean);
}

export async function doSetPassword(
  ctx: ActionContext,
  user: User,
  passwordHash: string,
  actingUserId: number | null,
): Promise<void> {
  await ctx.tx.user.update({ where: { id: user.id }, data: { passwordHash } });
  await audit(ctx, user, AuditLogEvent.USER_PASSWORD_CHANGED, actingUserId);
}

// ---- Activation -------------------------------------------------------------------------------

export interface DeactivationActions {
  delete_profile?: boolean;
  delete_public_channel_messages?: boolean;
  delete_private_channel_messages?: boolean;
  delete_direct_messages?: boolean;
}

export async function checkDeactivateUser(tx: Tx, actor: User, target: User): Promise<void> {
  // Zulip's access_user_by_id refuses a deactivated target first, then deactivate_user_backend
  // lets only owners deactivate owners (refused as the owner role is, spec 7's "insufficient
  // permission").
  if (!target.isActive) throw new JsonableError('User is deactivated');
  if (isOwner(target) && !isOwner(actor)) throw new InsufficientPermissionError();
  if (await isLastOwner(tx, target))
    throw new JsonableError('Cannot deactivate the only organization owner');
}

/** Zulip's deactivate_user_own_backend: the organization's last active account (its system
 * bots aside, which Zulip keeps in an organization of their own), then its last owner, stay. */
export async function checkDeactivateSelf(tx: Tx, user: User): Promise<void> {
  const active = await tx.user.count({
    where: {
      realmId: user.realmId,
      isActive: true,
      NOT: {
        isBot: true,
        botOwnerId: null,
        email: { in: Object.values(SYSTEM_BOTS).map((bot) => bot.email) },
      },
    },
  });
  if (active <= 1) throw new CannotDeactivateLastUserError(false);
  if (await isLastOwner(tx, user)) throw new CannotDeactivateLastUserError(true);
}

/** Deactivates the user's bots first, then the user; `actions` apply to each in that order.
 * Returns them in that order: once this commits, doDeleteMessagesOf deletes their messages. */
export async function doDeactivateUser(
  ctx: ActionContext,
  target: User,
  actingUserId: number,
  actions: DeactivationActions = {},
): Promise<User[]> {
  const bots = await ctx.tx.user.findMany({ where: { botOwnerId: target.id, isActive: true } });
  for (const bot of bots) await deactivateOne(ctx, bot, actingUserId, actions);
  await deactivateOne(ctx, target, actingUserId, actions);
  return [...bots, target];
}

async function deactivateOne(
  ctx: ActionContext,
  target: User,
  actingUserId: number,
  actions: DeactivationActions,
): Promise<void> {
  const { tx } = ctx;
  const deleted = actions.delete_profile === true;
  // The uploaded picture as committed, read with the row locked (an upload racing this one
  // would otherwise leave its files behind).
  if (deleted) await lockUserRow(ctx, target.id);
  const uploaded = deleted
    ? (await tx.user.findUniqueOrThrow({ where: { id: target.id } })).avatarHash
    : null;
  const updated = await tx.user.update({
    where: { id: target.id },
    data: {
      isActive: false,
      ...(deleted
        ? {
            isDeleted: true,
            // Zulip's replacement account is a placeholder (display_recipient shows it).
            isMirrorDummy: true,
            fullName: `Deleted user ${target.id}`,
            avatarSource: 'G',
            avatarHash: null,
            avatarVersion: { increment: 1 },
          }
        : {}),
    },
  });
  if (uploaded !== null) ctx.onCommit(() => removeAvatarFiles(target.realmId, uploaded));
  await tx.subscription.updateMany({ where: { userId: target.id }, data: { isUserActive: false } });
  await sendSubscriberActivityEvents(ctx, target, 'peer_remove');
  await audit(ctx, target, AuditLogEvent.USER_DEACTIVATED, actingUserId, { actions });
  await doExpireInvitesBy(ctx, target);
  const { withAccess: viewers, withoutAccess } = await activeUsersByAccessTo(target);
  const viewerIds = viewers.map((viewer) => viewer.id);
  if (deleted) {
    sendEventOnCommit(
      ctx,
      {
        type: 'realm_user',
        op: 'update',
        person: { user_id: target.id, full_name: `Deleted user ${target.id}` },
      },
      viewerIds,
    );
    sendEventOnCommit(
      ctx,
      { type: 'realm_user', op: 'update', person: { user_id: target.id, is_deleted: true } },
      viewerIds,
    );
    // The picture goes (spec 2.2): the avatar form, with the new version.
    const realm = await tx.realm.findUniqueOrThrow({ where: { id: target.realmId } });
    await sendByEmailVisibility(
      ctx,
      target,
      (visible) => ({
        type: 'realm_user',
        op: 'update',
        person: avatarPerson(updated, visible, realm),
      }),
      viewers,
    );
    // Its owner's and the administrators' bot lists show the same.
    if (target.isBot)
      await sendBotUpdate(ctx, updated, {
        full_name: updated.fullName,
        avatar_url: avatarUrl(updated, true, realm),
      });
  }
  sendEventOnCommit(
    ctx,
    { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: false } },
    [...viewerIds, target.id],
  );
  if (withoutAccess.length > 0) await sendDeactivationToOthers(ctx, target, withoutAccess);
  if (target.isBot) await sendBotUpdate(ctx, target, { is_active: false });
}

/** Zulip's send_events_for_user_deactivation for the users who may not see `target` (guests
 * of an organization that limits them): they hear no realm_user update, so each named group
 * the user was directly in tells them the user left it. (Zulip also sends realm_user remove to
 * guests who saw the user only through a shared channel; Parley's access rule still counts a
 * deactivated user's channels, so those guests hear the update instead.) */
async function sendDeactivationToOthers(
  ctx: ActionContext,
  target: User,
  withoutAccess: Viewer[],
): Promise<void> {
  const ids = withoutAccess.map((viewer) => viewer.id);
  const groups = await ctx.tx.$queryRaw<{ id: number }[]>`
    SELECT g.id FROM user_group_membership m JOIN user_group g ON g.id = m.user_group_id
    WHERE m.user_profile_id = ${target.id} AND g.name IS NOT NULL ORDER BY g.id`;
  for (const group of groups)
    sendEventOnCommit(
      ctx,
      { type: 'user_group', op: 'remove_members', group_id: group.id, user_ids: [target.id] },
      ids,
    );
}

// ---- Deleting a deactivated user's messages ----------------------------------------------------

interface DeletionKinds {
  publicChannels: boolean;
  privateChannels: boolean;
  direct: boolean;
}

/** The optional deletions of DELETE /users/{id} (spec 4.16), for users whose deactivation has
 * committed (Zulip too deletes a deactivated user's messages after deactivating them): each
 * batch commits on its own and publishes its own events, so a failure leaves the earlier
 * batches deleted and the user still deactivated. */
export async function doDeleteMessagesOf(
  senders: Pick<User, 'id' | 'realmId'>[],
  actions: DeactivationActions,
  { batchSize = MESSAGE_DELETION_BATCH_SIZE }: { batchSize?: number } = {},
): Promise<void> {
  const kinds: DeletionKinds = {
    publicChannels: actions.delete_public_channel_messages === true,
    privateChannels: actions.delete_private_channel_messages === true,
    direct: actions.delete_direct_messages === true,
  };
  if (!kinds.publicChannels && !kinds.privateChannels && !kinds.direct) return;
  for (const sender of senders) {
    let after = 0;
    try {
      for (;;) {
        const batch = await runAction((ctx) =>
          doDeleteSenderBatch(ctx, sender, kinds, after, batchSize),
        );
        if (batch.taken < batchSize || batch.last === null) break;
        after = batch.last;
      }
    } catch (error) {
      getLogger().error("deleting a deactivated user's messages failed", {
        error,
        userId: sender.id,
        deletedUpTo: after,
      });
      throw error;
    }
  }
}

/** Deletes the sender's next `limit` messages of the wanted kinds above id `after` (see
 * doDeleteMessageBatch). The channel test is a subquery rather than a join so that the batch
 * walks the (sender_id, id) index and stops after `limit` rows; a join has the planner read
 * every remaining message of the sender and sort them, batch after batch. */
function doDeleteSenderBatch(
  ctx: ActionContext,
  sender: Pick<User, 'id' | 'realmId'>,
  kinds: DeletionKinds,
  after: number,
  limit: number,
): Promise<DeletedBatch> {
  return doDeleteMessageBatch(
    ctx,
    Prisma.sql`
      SELECT m.id FROM message m
      WHERE m.sender_id = ${sender.id} AND m.id > ${after}
        AND CASE WHEN NOT m.is_channel_message THEN ${kinds.direct}::boolean
          ELSE EXISTS (
            SELECT FROM stream s
            WHERE s.realm_id = ${sender.realmId} AND s.recipient_id = m.recipient_id
              AND CASE WHEN s.invite_only THEN ${kinds.privateChannels}::boolean
                ELSE ${kinds.publicChannels}::boolean END)
        END
      ORDER BY m.id LIMIT ${limit}`,
  );
}

/** Zulip's reactivate_user_backend: what may not come back. (A bot whose owner is deactivated
 * comes back owned by whoever reactivates it: doAdoptReactivatedBot.) */
export async function checkReactivateUser(tx: Tx, target: User): Promise<void> {
  // A deleted profile is what Zulip's do_delete_user leaves: a placeholder, which nobody can
  // bring back (its owner signs up anew).
  if (target.isDeleted || target.isMirrorDummy)
    throw new JsonableError(
      'Cannot activate a placeholder account; ask the user to sign up, instead.',
    );
  if (!target.isBot) return;
  // Zulip's check_bot_name_available on activation.
  const [namesake] = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM user_profile WHERE realm_id = ${target.realmId} AND is_active
      AND full_name = ${target.fullName.trim()} LIMIT 1`;
  if (namesake)
    throw new JsonableError(
      `There is already an active bot named "${target.fullName}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
}

export async function doReactivateUser(
  ctx: ActionContext,
  target: User,
  actingUserId: number,
): Promise<void> {
  if (target.isActive) throw new JsonableError('User is already active.');
  await ctx.tx.user.update({ where: { id: target.id }, data: { isActive: true } });
  await ctx.tx.subscription.updateMany({
    where: { userId: target.id },
    data: { isUserActive: true },
  });
  await sendSubscriberActivityEvents(ctx, target, 'peer_add');
  await audit(ctx, target, AuditLogEvent.USER_REACTIVATED, actingUserId);
  await sendPersonUpdate(ctx, { ...target, isActive: true }, { is_active: true });
  if (!target.isBot) await sendExportConsent(ctx, target, target.allowPrivateDataExport);
  if (target.isBot) await sendBotUpdate(ctx, target, { is_active: true });
}

// ---- Credentials ------------------------------------------------------------------------------

export async function doRegenerateApiKey(
  ctx: ActionContext,
  user: User,
  actingUserId: number,
): Promise<string> {
  const apiKey = generateApiKey();
  await ctx.tx.user.update({ where: { id: user.id }, data: { apiKey } });
  await audit(ctx, user, AuditLogEvent.USER_API_KEY_CHANGED, actingUserId);
  if (user.isBot) await sendBotUpdate(ctx, user, { api_key: apiKey });
  // The clients the old key logged in are out: their push registrations go with it (Zulip's
  // clear_push_device_tokens; feature level 492 for client devices).
  await doClearPushDevices(ctx, user);
  await doRemoveAllClientDevices(ctx, user);
  return apiKey;
}

/** A successful login. The first one of an imported stub account makes it a regular account
 * (spec 3); it, or the first one of an account created through the API, is when the user
 * joined (spec 2.2: date_joined). */
export async function doCompleteFirstLogin(ctx: ActionContext, user: User): Promise<void> {
  const now = new Date();
  if (!user.isImportedStub) {
    await ctx.tx.user.update({
      where: { id: user.id },
      data: {
        lastLogin: now,
        ...(user.dateJoinedAtFirstLogin ? { dateJoined: now, dateJoinedAtFirstLogin: false } : {}),
      },
    });
    return;
  }
  await ctx.tx.user.update({
    where: { id: user.id },
    data: { isImportedStub: false, dateJoined: now, lastLogin: now },
  });
  await sendPersonUpdate(ctx, user, { is_imported_stub: false });
}

/** realm_bot update to whoever sees the bot (lib/bots botAudience). */
export async function sendBotUpdate(
  ctx: ActionContext,
  bot: User,
  fields: Record<string, unknown>,
): Promise<void> {
  const recipients = await botAudience(bot, ctx.tx);
  sendEventOnCommit(
    ctx,
    { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, ...fields } },
    recipients,
  );
}
