// Channels: GET /streams, GET/PATCH/DELETE /streams/{id}, GET /streams/{id}/members,
// GET /get_stream_id, GET /users/me/{stream_id}/topics.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import {
  getPrisma,
  idsByLowerEquals,
  Prisma,
  runAction,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import { CannotAdministerChannelError, JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import {
  checkChangePrivacy,
  checkChangeStreamGroupSetting,
  checkDescription,
  checkRenameStream,
  checkTopicsPolicy,
  defaultStreamIds,
  doArchiveStream,
  doChangeStreamDescription,
  doChangeStreamGroupSetting,
  doChangeStreamMessageRetention,
  doChangeStreamPrivacy,
  doChangeStreamTopicsPolicy,
  doRenameStream,
  doSetDefaultStream,
  doUnarchiveStream,
  MAX_DESCRIPTION_LENGTH,
  TOPICS_POLICIES,
} from '../actions/streams';
import {
  groupSettingParams,
  groupSettingValue,
  parseRetention,
  pickGroupSettings,
  retentionParam,
} from '../lib/channel-params';
import {
  accessStreamById,
  canAdministerChannel,
  hasContentAccess,
  hasMetadataAccess,
  loadPermissions,
  loadStreamDetails,
  subscriptionOf,
  type Permissions,
} from '../lib/streams';
import { isAdmin, isGuest, isOwner } from '../lib/users';
import { OrganizationOwnerRequiredError, InsufficientPermissionError } from '@parley/errors';
import { presentStream, STREAM_GROUP_SETTINGS } from '../presenters/streams';

export const streamRoutes = Router();

const streamPath = { stream_id: p.int({ min: 1 }) };

defineRoute(streamRoutes, '/streams', {
  GET: userEndpoint(
    {
      params: {
        include_public: p.bool().default(true),
        include_web_public: p.bool().default(false),
        include_subscribed: p.bool().default(true),
        exclude_archived: p.bool().default(true),
        include_all_active: p.bool().default(false),
        include_all: p.bool().default(false),
        include_default: p.bool().default(false),
        include_owner_subscribed: p.bool().default(false),
        include_can_access_content: p.bool().default(false),
      },
    },
    async ({ user, realm, params }) => {
      const prisma = getPrisma();
      const perms = await loadPermissions(user);
      const all = await prisma.stream.findMany({
        where: { realmId: realm.id, ...(params.exclude_archived ? { deactivated: false } : {}) },
        orderBy: { name: 'asc' },
      });
      const subscribed = await subscribedRecipientIds(user.id);
      const ownerSubscribed =
        params.include_owner_subscribed && user.isBot && user.botOwnerId !== null
          ? await subscribedRecipientIds(user.botOwnerId)
          : new Set<number>();
      const isSubscribed = (stream: Stream) => subscribed.has(stream.recipientId!);
      const wanted = (stream: Stream): boolean => {
        if (params.include_all || params.include_all_active)
          return hasMetadataAccess(perms, stream, isSubscribed(stream));
        if (params.include_can_access_content)
          return hasContentAccess(perms, stream, isSubscribed(stream));
        // Guests never list public channels they are not in.
        if (params.include_public && !isGuest(user) && !stream.inviteOnly) return true;
        if (params.include_web_public && stream.isWebPublic && !stream.deactivated) return true;
        if (params.include_subscribed && isSubscribed(stream)) return true;
        return ownerSubscribed.has(stream.recipientId!) && hasMetadataAccess(perms, stream, false);
      };
      const streams = all.filter(wanted);
      const details = await loadStreamDetails(realm.id, streams, {
        withSubscribers: false,
      });
      const defaults = params.include_default
        ? new Set(await defaultStreamIds(realm.id, prisma))
        : null;
      return {
        streams: streams.map((stream) => ({
          ...presentStream(stream, details.context(stream)),
          ...(defaults ? { is_default: defaults.has(stream.id) } : {}),
        })),
      };
    },
  ),
});

defineRoute(streamRoutes, '/streams/:stream_id', {
  GET: userEndpoint({ path: streamPath }, async ({ user, realm, path }) => {
    const perms = await loadPermissions(user);
    const { stream } = await accessStreamById(perms, path.stream_id, {
      requireContentAccess: false,
    });
    const details = await loadStreamDetails(realm.id, [stream], {
      withSubscribers: false,
    });
    return { stream: presentStream(stream, details.context(stream)) };
  }),
  PATCH: userEndpoint(
    {
      path: streamPath,
      params: {
        description: p.string({ maxLength: MAX_DESCRIPTION_LENGTH }).optional(),
        new_name: p.string().optional(),
        is_private: p.bool().optional(),
        is_web_public: p.bool().optional(),
        history_public_to_subscribers: p.bool().optional(),
        is_default_stream: p.bool().optional(),
        message_retention_days: retentionParam,
        is_archived: p.bool().optional(),
        topics_policy: p.enum(TOPICS_POLICIES).optional(),
        ...groupSettingParams(
          z.strictObject({ new: groupSettingValue, old: groupSettingValue.optional() }),
        ),
      },
    },
    async ({ user, realm, path, params }) => {
      const retention = parseRetention(params.message_retention_days);
      await runAction(async (ctx) => {
        const { tx } = ctx;
        const perms = await loadPermissions(user);
        let stream = await accessStreamForUpdate(tx, perms, path.stream_id);
        if (params.is_archived === false) stream = await doUnarchiveStream(ctx, stream, user.id);
        const isDefault = (await defaultStreamIds(realm.id, tx)).includes(stream.id);
        if (
          params.is_private !== undefined ||
          params.is_web_public !== undefined ||
          params.history_public_to_subscribers !== undefined
        ) {
          if (
            params.is_private !== undefined &&
            !hasContentAccess(perms, stream, (await subscriptionOf(user.id, stream, tx)) !== null)
          )
            throw new JsonableError('Channel content access is required.');
          const privacy = await checkChangePrivacy(
            tx,
            perms,
            realm,
            stream,
            {
              isPrivate: params.is_private,
              isWebPublic: params.is_web_public,
              historyPublicToSubscribers: params.history_public_to_subscribers,
            },
            params.is_default_stream ?? isDefault,
          );
          stream = await doChangeStreamPrivacy(ctx, stream, privacy, user.id);
        }
        if (params.is_default_stream !== undefined) {
          if (!isAdmin(user)) throw new InsufficientPermissionError();
          await doSetDefaultStream(ctx, stream, params.is_default_stream);
        }
        if (retention !== undefined) {
          if (!isOwner(user)) throw new OrganizationOwnerRequiredError();
          stream = await doChangeStreamMessageRetention(ctx, stream, retention, user.id);
        }
        if (params.topics_policy !== undefined) {
          await checkTopicsPolicy(tx, perms, params.topics_policy);
          stream = await doChangeStreamTopicsPolicy(ctx, stream, params.topics_policy, user.id);
        }
        if (params.description !== undefined) {
          const description = checkDescription(params.description);
          if (description !== stream.description)
            stream = await doChangeStreamDescription(ctx, stream, description, user.id);
        }
        if (params.new_name !== undefined) {
          const name = await checkRenameStream(tx, stream, params.new_name);
          stream = await doRenameStream(ctx, stream, name, user.id);
        }
        for (const [setting, change] of Object.entries(pickGroupSettings(params))) {
          const key = setting as keyof typeof STREAM_GROUP_SETTINGS;
          if (
            (key === 'can_add_subscribers_group' || key === 'can_subscribe_group') &&
            !hasContentAccess(perms, stream, (await subscriptionOf(user.id, stream, tx)) !== null)
          )
            throw new JsonableError('Channel content access is required.');
          const groupId = await checkChangeStreamGroupSetting(tx, perms, stream, key, change);
          if (groupId !== null)
            stream = await doChangeStreamGroupSetting(ctx, stream, key, groupId, user.id);
        }
      });
      return {};
    },
  ),
  DELETE: userEndpoint({ path: streamPath }, async ({ user, path }) => {
    await runAction(async (ctx) => {
      const perms = await loadPermissions(user);
      const stream = await accessStreamForUpdate(ctx.tx, perms, path.stream_id);
      await doArchiveStream(ctx, stream, user.id);
    });
    return {};
  }),
});

defineRoute(streamRoutes, '/streams/:stream_id/members', {
  GET: userEndpoint({ path: streamPath }, async ({ user, realm, path }) => {
    const perms = await loadPermissions(user);
    const { stream, subscription } = await accessStreamById(perms, path.stream_id, {
      requireContentAccess: false,
    });
    checkSubscriberAccess(perms, stream, subscription !== null);
    const details = await loadStreamDetails(realm.id, [stream]);
    return { subscribers: details.subscribers.get(stream.id) ?? [] };
  }),
});

defineRoute(streamRoutes, '/get_stream_id', {
  GET: userEndpoint({ params: { stream: p.string() } }, async ({ user, realm, params }) => {
    const name = params.stream.trim();
    const prisma = getPrisma();
    const [id] = await idsByLowerEquals(prisma, 'stream', 'name', realm.id, [name]);
    const stream =
      id === undefined
        ? null
        : await prisma.stream.findFirst({ where: { id, deactivated: false } });
    const perms = await loadPermissions(user);
    if (
      !stream ||
      !hasContentAccess(perms, stream, (await subscriptionOf(user.id, stream)) !== null)
    )
      throw new JsonableError(`Invalid channel name '${params.stream}'`);
    return { stream_id: stream.id };
  }),
});

defineRoute(streamRoutes, '/users/me/:stream_id/topics', {
  GET: userEndpoint(
    { path: streamPath, params: { allow_empty_topic_name: p.bool().default(false) } },
    async ({ user, path, params }) => {
      const perms = await loadPermissions(user);
      const { stream } = await accessStreamById(perms, path.stream_id);
      const topics = await topicHistory(stream, user);
      return {
        topics: topics.map((topic) => ({
          name:
            topic.name === '' && !params.allow_empty_topic_name
              ? EMPTY_TOPIC_DISPLAY_NAME
              : topic.name,
          max_id: topic.max_id,
        })),
      };
    },
  ),
});

const EMPTY_TOPIC_DISPLAY_NAME = 'general chat';

/** Zulip's get_topic_history_for_stream: topics grouped case-insensitively, newest first,
 * each named as in its latest message. Without shared history only the messages the user
 * received count. */
async function topicHistory(
  stream: Stream,
  user: User,
): Promise<{ name: string; max_id: number }[]> {
  const onlyReceived = stream.historyPublicToSubscribers
    ? Prisma.empty
    : Prisma.sql`AND id IN (SELECT message_id FROM user_message WHERE user_profile_id = ${user.id})`;
  return getPrisma().$queryRaw<{ name: string; max_id: number }[]>`
    SELECT m.subject AS name, t.max_id
    FROM (
      SELECT max(id) AS max_id FROM message
      WHERE recipient_id = ${stream.recipientId} ${onlyReceived}
      GROUP BY upper(subject)
    ) t JOIN message m ON m.id = t.max_id
    ORDER BY t.max_id DESC`;
}

/** PATCH and DELETE /streams/{id}: channel administrators only. Others who can read the channel
 * learn they lack the permission; the rest that the id is invalid. */
async function accessStreamForUpdate(
  tx: Tx,
  perms: Permissions,
  streamId: number,
): Promise<Stream> {
  const stream = await tx.stream.findFirst({
    where: { id: streamId, realmId: perms.user.realmId },
  });
  if (!stream) throw new JsonableError('Invalid channel ID');
  if (canAdministerChannel(perms, stream)) return stream;
  const subscribed = (await subscriptionOf(perms.user.id, stream, tx)) !== null;
  if (hasContentAccess(perms, stream, subscribed)) throw new CannotAdministerChannelError();
  throw new JsonableError('Invalid channel ID');
}

/** Zulip's validate_user_access_to_subscribers. */
function checkSubscriberAccess(perms: Permissions, stream: Stream, subscribed: boolean): void {
  if (stream.isWebPublic || subscribed) return;
  if (isGuest(perms.user))
    throw new JsonableError('Subscriber data is not available for this channel');
  if (!stream.inviteOnly) return;
  if (hasMetadataAccess(perms, stream, false)) return;
  throw new JsonableError('Unable to retrieve subscribers for private channel');
}

async function subscribedRecipientIds(userId: number): Promise<Set<number>> {
  const rows = await getPrisma().subscription.findMany({
    where: { userId, active: true },
    select: { recipientId: true },
  });
  return new Set(rows.map((row) => row.recipientId));
}
