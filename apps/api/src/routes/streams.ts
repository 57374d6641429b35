// Channels: GET /streams, GET/PATCH/DELETE /streams/{id}, GET /streams/{id}/members,
// POST /streams/{id}/delete_topic, GET /streams/{id}/email_address, GET /get_stream_id,
// GET /users/me/{stream_id}/topics, POST/DELETE /default_streams.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction, type Stream } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, int32, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkChangePrivacy,
  checkChangeStreamGroupSetting,
  checkProtectedHistoryTopicGroup,
  checkDescription,
  checkRenameStream,
  checkTopicsPolicy,
  defaultStreamIds,
  doArchiveStream,
  doChangeStreamDescription,
  doChangeStreamGroupSetting,
  doChangeStreamMessageRetention,
  doChangeStreamPrivacy,
  doChangeStreamFolder,
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
  accessStreamForUpdate,
  channelIdByName,
  checkSubscriberAccess,
  hasContentAccess,
  listChannels,
  loadPermissions,
  loadStreamDetails,
  subscriptionOf,
  topicHistory,
} from '../lib/streams';
import { channelFolderById } from '../lib/channel-folders';
import {
  archivedNotice,
  describedNotice,
  postingPermissionNotice,
  privacyNotice,
  renamedNotice,
  retentionNotice,
  sendChannelNotices,
  topicsPolicyNotice,
  unarchivedNotice,
  type ChannelNotice,
} from '../actions/channel-notices';
import { doDeleteTopic } from '../actions/topic-deletion';
import { checkCanPost } from '../actions/messages';
import { channelEmailAddressFor } from '../actions/email-gateway';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import { isAdmin, isOwner } from '../lib/users';
import { OrganizationOwnerRequiredError } from '@parley/errors';
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
      response: z.object({
        streams: z.array(schema.stream.extend({ is_default: z.boolean().optional() })),
      }),
    },
    async ({ user, realm, params }) => {
      const streams = await listChannels(user, realm.id, params);
      const details = await loadStreamDetails(realm.id, streams, {
        withSubscribers: false,
      });
      const defaults = params.include_default ? new Set(await defaultStreamIds(realm.id)) : null;
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
  GET: userEndpoint(
    { path: streamPath, response: z.object({ stream: schema.stream }) },
    async ({ user, realm, path }) => {
      const perms = await loadPermissions(user);
      const { stream } = await accessStreamById(perms, path.stream_id, {
        requireContentAccess: false,
      });
      const details = await loadStreamDetails(realm.id, [stream], {
        withSubscribers: false,
      });
      return { stream: presentStream(stream, details.context(stream)) };
    },
  ),
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
        folder_id: p.json(int32.nullable()).optional(),
        ...groupSettingParams(
          z.strictObject({ new: groupSettingValue, old: groupSettingValue.nullish() }),
        ),
      },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      const retention = parseRetention(params.message_retention_days);
      // The Notification Bot's notices, posted once the changes have committed.
      const notices: (ChannelNotice | null)[] = [];
      await runAction(async (ctx) => {
        const { tx } = ctx;
        const perms = await loadPermissions(user);
        let stream = await accessStreamForUpdate(tx, perms, path.stream_id);
        // Each change that went through gets its notice, as Zulip's actions send them.
        const changed = (
          after: Stream,
          notice: (before: Stream, after: Stream) => ChannelNotice | null,
        ) => {
          if (after !== stream) notices.push(notice(stream, after));
          stream = after;
        };
        if (params.is_archived === false)
          changed(await doUnarchiveStream(ctx, stream, user.id), (_, after) =>
            unarchivedNotice(after),
          );
        const isDefault = (await defaultStreamIds(realm.id, tx)).includes(stream.id);
        // Zulip's update_stream_backend checks this first, whoever asks.
        if ((params.is_private ?? stream.inviteOnly) && (params.is_default_stream ?? isDefault))
          throw new JsonableError('A default channel cannot be private.');
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
          changed(await doChangeStreamPrivacy(ctx, stream, privacy, user.id), (before, after) =>
            privacyNotice(user, before, after),
          );
        }
        if (params.is_default_stream !== undefined) {
          // Zulip's CannotManageDefaultChannelError (can_manage_default_streams: administrators).
          if (!isAdmin(user))
            throw new JsonableError('You do not have permission to change default channels.');
          await doSetDefaultStream(ctx, stream, params.is_default_stream);
        }
        if (retention !== undefined) {
          if (!isOwner(user)) throw new OrganizationOwnerRequiredError();
          changed(
            await doChangeStreamMessageRetention(ctx, stream, retention, user.id),
            (before, after) => retentionNotice(user, realm, before, after),
          );
        }
        if (params.topics_policy !== undefined) {
          await checkTopicsPolicy(tx, perms, params.topics_policy);
          changed(
            await doChangeStreamTopicsPolicy(ctx, stream, params.topics_policy, user.id),
            (before, after) => topicsPolicyNotice(user, before, after),
          );
        }
        if (params.description !== undefined) {
          const description = checkDescription(params.description);
          if (description !== stream.description)
            changed(
              await doChangeStreamDescription(ctx, stream, description, user.id),
              (before, after) => describedNotice(user, before, after),
            );
        }
        if (params.new_name !== undefined) {
          const name = await checkRenameStream(tx, stream, params.new_name);
          changed(await doRenameStream(ctx, stream, name, user.id), (before, after) =>
            renamedNotice(user, before, after),
          );
        }
        if (params.folder_id !== undefined) {
          const folderId =
            params.folder_id === null
              ? null
              : (await channelFolderById(tx, realm.id, params.folder_id)).id;
          // No notice: Zulip posts none for a channel moved between folders.
          if (folderId !== stream.folderId)
            stream = await doChangeStreamFolder(ctx, stream, folderId, user.id);
        }
        for (const [setting, change] of Object.entries(pickGroupSettings(params))) {
          const key = setting as keyof typeof STREAM_GROUP_SETTINGS;
          if (
            (key === 'can_add_subscribers_group' || key === 'can_subscribe_group') &&
            !hasContentAccess(perms, stream, (await subscriptionOf(user.id, stream, tx)) !== null)
          )
            throw new JsonableError('Channel content access is required.');
          const groupId = await checkChangeStreamGroupSetting(tx, perms, stream, key, change);
          if (groupId === null) continue;
          const before = stream;
          stream = await doChangeStreamGroupSetting(ctx, stream, key, groupId, user.id);
          // The only group setting Zulip reports.
          if (key === 'can_send_message_group')
            notices.push(await postingPermissionNotice(user, before, stream, change.new));
        }
        // Checked on the result, whichever of the three the request changed (it all rolls back).
        if (
          params.is_private !== undefined ||
          params.history_public_to_subscribers !== undefined ||
          params.can_create_topic_group !== undefined
        )
          await checkProtectedHistoryTopicGroup(
            realm.id,
            stream.inviteOnly && !stream.historyPublicToSubscribers,
            stream.canCreateTopicGroupId,
          );
      });
      await sendChannelNotices(realm, notices);
      return {};
    },
  ),
  DELETE: userEndpoint(
    { path: streamPath, response: schema.empty },
    async ({ user, realm, path }) => {
      const stream = await runAction(async (ctx) => {
        const perms = await loadPermissions(user);
        const stream = await accessStreamForUpdate(ctx.tx, perms, path.stream_id);
        await doArchiveStream(ctx, stream, user.id);
        return stream;
      });
      await sendChannelNotices(realm, [archivedNotice(stream)]);
      return {};
    },
  ),
});

defineRoute(streamRoutes, '/streams/:stream_id/members', {
  GET: userEndpoint(
    { path: streamPath, response: z.object({ subscribers: schema.ids }) },
    async ({ user, realm, path }) => {
      const perms = await loadPermissions(user);
      const { stream, subscription } = await accessStreamById(perms, path.stream_id, {
        requireContentAccess: false,
      });
      checkSubscriberAccess(perms, stream, subscription !== null);
      const details = await loadStreamDetails(realm.id, [stream]);
      return { subscribers: details.subscribers.get(stream.id) ?? [] };
    },
  ),
});

defineRoute(streamRoutes, '/streams/:stream_id/email_address', {
  GET: userEndpoint(
    {
      path: streamPath,
      params: { sender_id: p.int({ min: 0 }).optional() },
      response: z.object({ email: z.string() }),
    },
    async ({ user, realm, path, params }) => {
      const perms = await loadPermissions(user);
      const { stream } = await accessStreamById(perms, path.stream_id);
      // Only who may post here may have its address (feature level 448).
      await checkCanPost(user, stream);
      return { email: await channelEmailAddressFor(realm, stream, user, params.sender_id) };
    },
  ),
});

defineRoute(streamRoutes, '/get_stream_id', {
  GET: userEndpoint(
    { params: { stream: p.string() }, response: z.object({ stream_id: schema.id }) },
    async ({ user, realm, params }) => {
      return { stream_id: await channelIdByName(user, realm.id, params.stream) };
    },
  ),
});

defineRoute(streamRoutes, '/users/me/:stream_id/topics', {
  GET: userEndpoint(
    {
      path: streamPath,
      params: { allow_empty_topic_name: p.bool().default(false) },
      response: z.object({ topics: z.array(z.object({ name: z.string(), max_id: schema.id })) }),
    },
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

// Zulip's delete_in_topic: administrators delete a topic's messages they can read; a topic too
// big for one request answers complete: false, and the request is repeated.
defineRoute(streamRoutes, '/streams/:stream_id/delete_topic', {
  POST: userEndpoint(
    {
      adminOnly: true,
      path: streamPath,
      params: { topic_name: p.string() },
      response: z.object({ complete: z.boolean() }),
    },
    async ({ user, path, params }) => {
      const perms = await loadPermissions(user);
      const { stream } = await accessStreamById(perms, path.stream_id);
      // Zulip's maybe_rename_general_chat_to_empty_topic.
      const topic = params.topic_name === EMPTY_TOPIC_DISPLAY_NAME ? '' : params.topic_name;
      return { complete: await doDeleteTopic(user, stream, topic) };
    },
  ),
});

// The organization's default channels (Zulip's add_default_stream / remove_default_stream);
// PATCH /streams/{id} with is_default_stream does the same.
const defaultStreamSpec = {
  adminOnly: true,
  // Any integer: an id no channel has is "Invalid channel ID", as Zulip's access_stream_by_id.
  params: { stream_id: p.int() },
  response: schema.empty,
} as const;

defineRoute(streamRoutes, '/default_streams', {
  POST: userEndpoint(defaultStreamSpec, async ({ user, params }) => {
    const perms = await loadPermissions(user);
    const { stream } = await accessStreamById(perms, params.stream_id, { allowArchived: false });
    if (stream.inviteOnly) throw new JsonableError('Private channels cannot be made default.');
    await runAction((ctx) => doSetDefaultStream(ctx, stream, true));
    return {};
  }),
  DELETE: userEndpoint(defaultStreamSpec, async ({ user, params }) => {
    const perms = await loadPermissions(user);
    // Zulip's allow_realm_admin: an administrator need not be able to read the channel.
    const { stream } = await accessStreamById(perms, params.stream_id, {
      requireContentAccess: false,
      allowArchived: false,
    });
    await runAction((ctx) => doSetDefaultStream(ctx, stream, false));
    return {};
  }),
});
