// Subscriptions: GET/POST/PATCH/DELETE /users/me/subscriptions, POST
// /users/me/subscriptions/properties, PATCH /users/me/subscriptions/{stream_id} (spec 4.12),
// GET /users/{user_id}/subscriptions/{stream_id}; and POST /channels/create, which creates a
// channel with the same settings as subscribing creates one, without subscribing its creator.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import {
  runAction,
  type ActionContext,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import {
  ChannelExistsError,
  InsufficientPermissionError,
  JsonableError,
  NotFoundError,
} from '@parley/errors';
import { defineRoute, p, type ParamValues } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkChannelCreation,
  checkDescription,
  checkStreamName,
  doCreateStreams,
  MAX_DESCRIPTION_LENGTH,
  TOPICS_POLICIES,
  type ChannelSettings,
} from '../actions/streams';
import {
  checkSubscriptionProperty,
  doAddSubscriptions,
  doChangeSubscriptionProperty,
  doRemoveSubscriptions,
  HEX_COLOR,
  type SubscriptionPair,
} from '../actions/subscriptions';
import {
  sendNewSubscriptionNotices,
  sendsSubscriptionMessages,
} from '../actions/subscription-notices';
import {
  groupSettingParams,
  groupSettingValue,
  id,
  includeSubscribersParam,
  MAX_LIST,
  parseRetention,
  pickGroupSettings,
  MAX_CHANNEL_NAMES,
  principalsParam,
  retentionParam,
} from '../lib/channel-params';
import {
  accessStreamById,
  canAddSubscribers,
  canRemoveSubscribers,
  hasContentAccess,
  loadPermissions,
  streamsByName,
  subscriptionOf,
} from '../lib/streams';
import { isGuest } from '../lib/users';
import { channelFolderById } from '../lib/channel-folders';
import {
  resolvePrincipals,
  subscribedRecipients,
  subscriptionsOf,
  userByPathSegment,
} from '../lib/subscriptions';

export const subscriptionRoutes = Router();

/** The settings a new channel takes, as both channel-creating endpoints take them. */
const channelCreationParams = {
  invite_only: p.bool().default(false),
  is_web_public: p.bool().default(false),
  is_default_stream: p.bool().default(false),
  history_public_to_subscribers: p.bool().optional(),
  message_retention_days: retentionParam,
  topics_policy: p.jsonOrText(z.enum(TOPICS_POLICIES)).default('inherit'),
  send_new_subscription_messages: p.bool().default(true),
  announce: p.bool().default(false),
  folder_id: p.int().optional(),
  ...groupSettingParams(groupSettingValue),
};

type ChannelCreationValues = ParamValues<typeof channelCreationParams>;

/** Settings from the parameters; the folder, if one is asked for, is checked by
 * checkedFolder in the request's transaction. */
function channelSettingsOf(params: ChannelCreationValues): ChannelSettings {
  return {
    inviteOnly: params.invite_only,
    isWebPublic: params.is_web_public,
    historyPublicToSubscribers: params.history_public_to_subscribers ?? null,
    // "realm_default" (null) is the default: only other values need an owner.
    messageRetentionDays: parseRetention(params.message_retention_days) ?? undefined,
    topicsPolicy: params.topics_policy,
    isDefaultStream: params.is_default_stream,
    groups: pickGroupSettings(params),
    folderId: null,
  };
}

/** The folder_id parameter's folder, checked whether or not a channel gets created, as Zulip
 * checks it. */
async function checkedFolder(
  tx: Tx,
  realmId: number,
  folderId: number | undefined,
): Promise<number | null> {
  return folderId === undefined ? null : (await channelFolderById(tx, realmId, folderId)).id;
}

/** Whether the Notification Bot's direct messages go out, and the answer's key for it:
 * present exactly when the request asked for them. */
function subscriptionMessagesSent(asked: boolean, subscribedUsers: number) {
  const sent = sendsSubscriptionMessages(asked, subscribedUsers);
  return { sent, answer: asked ? { new_subscription_messages_sent: sent } : {} };
}

/** The channels to subscribe to, as POST names them `subscriptions` and PATCH `add`. */
const channelsToAdd = p.json(
  z
    .array(
      z.strictObject({
        name: z.string(),
        description: z.string().max(MAX_DESCRIPTION_LENGTH).optional(),
        // Checked by checkColors, in Zulip's words.
        color: z.string().optional(),
      }),
    )
    .max(MAX_CHANNEL_NAMES),
);

/** What subscribing takes besides the channels: whom, and the settings of channels it creates. */
const subscribeParams = {
  principals: principalsParam,
  authorization_errors_fatal: p.bool().default(true),
  ...channelCreationParams,
};

const channelsToRemove = p.json(z.array(z.string()).max(MAX_CHANNEL_NAMES));

const subscribedAnswer = z.object({
  subscribed: z.record(z.string(), z.array(z.string())),
  already_subscribed: z.record(z.string(), z.array(z.string())),
  unauthorized: z.array(z.string()).optional(),
  new_subscription_messages_sent: z.boolean().optional(),
});

const removedAnswer = z.object({
  removed: z.array(z.string()),
  not_removed: z.array(z.string()),
});

type ChannelsToAdd = ParamValues<{ channels: typeof channelsToAdd }>['channels'];
type SubscribeValues = ParamValues<typeof subscribeParams>;

/** Zulip's AddSubscriptionData validates each color with check_color("add.color", …), whichever
 * parameter carries the list. */
function checkColors(channels: ChannelsToAdd, parameter: 'subscriptions' | 'add'): void {
  channels.forEach((item, index) => {
    if (item.color !== undefined && !HEX_COLOR.test(item.color))
      throw new JsonableError(
        `Invalid ${parameter}[${index}]: Value error, add.color is not a valid hex color code`,
      );
  });
}

/** Zulip's add_subscriptions_backend, inside the caller's transaction: creates the channels
 * that do not exist, checks access and permissions, subscribes. Returns the answer and the
 * notices, which go out once the transaction has committed (`after`). */
async function addSubscriptions(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  channels: ChannelsToAdd,
  params: SubscribeValues,
): Promise<{ answer: z.infer<typeof subscribedAnswer>; after: () => Promise<void> }> {
  const { tx } = ctx;
  const settings = channelSettingsOf(params);
  const requested = new Map<
    string,
    { name: string; description: string; color: string | undefined }
  >();
  for (const item of channels) {
    const name = checkStreamName(item.name);
    if (!requested.has(name.toLowerCase()))
      requested.set(name.toLowerCase(), {
        name,
        description: checkDescription(item.description ?? ''),
        color: item.color,
      });
  }
  const perms = await loadPermissions(user);
  settings.folderId = await checkedFolder(tx, realm.id, params.folder_id);
  // No principals (or an empty list) means the caller, as in Zulip.
  const targets = params.principals?.length
    ? await resolvePrincipals(tx, user, realm, params.principals)
    : [user];
  const existing = await streamsByName(
    realm.id,
    [...requested.values()].map((r) => r.name),
    tx,
  );
  const missing = [...requested.values()].filter((r) => !existing.has(r.name));
  let created: Stream[] = [];
  if (missing.length > 0) {
    await checkChannelCreation(tx, perms, realm, settings);
    created = await doCreateStreams(ctx, realm, user.id, missing, settings);
    // Names a concurrent request created first are existing channels after all.
    const made = new Set(created.map((stream) => stream.name.toLowerCase()));
    const raced = missing.filter((r) => !made.has(r.name.toLowerCase()));
    for (const [name, stream] of await streamsByName(
      realm.id,
      raced.map((r) => r.name),
      tx,
    ))
      existing.set(name, stream);
  }
  const authorized: Stream[] = [];
  const unauthorized: Stream[] = [];
  const mine = await subscribedRecipients(tx, user.id, [...existing.values()]);
  for (const stream of existing.values()) {
    const subscribed = mine.has(stream.recipientId!);
    (hasContentAccess(perms, stream, subscribed) ? authorized : unauthorized).push(stream);
  }
  if (unauthorized.length > 0 && params.authorization_errors_fatal)
    throw new JsonableError(`Unable to access channel (${unauthorized[0]!.name}).`);
  // Whoever creates a channel chooses its first subscribers; existing channels need the
  // permission to add others.
  if (targets.some((target) => target.id !== user.id)) {
    for (const stream of authorized) {
      if (!canAddSubscribers(perms, stream, realm.canAddSubscribersGroupId))
        throw new InsufficientPermissionError();
    }
  }
  const streams = [...created, ...authorized];
  const colors = new Map(
    streams.flatMap((stream) => {
      const color = requested.get(stream.name.toLowerCase())?.color;
      return color === undefined ? [] : [[stream.id, color] as const];
    }),
  );
  const result = await doAddSubscriptions(
    ctx,
    realm,
    targets.flatMap((target) => streams.map((stream) => ({ user: target, stream }))),
    user.id,
    { colors },
  );
  const bots = new Set(targets.filter((target) => target.isBot).map((target) => target.id));
  const subscribed = namesByUser(result.subscribed);
  const messages = subscriptionMessagesSent(
    params.send_new_subscription_messages,
    Object.keys(subscribed).length,
  );
  return {
    answer: {
      subscribed,
      already_subscribed: namesByUser(result.alreadySubscribed),
      ...(params.authorization_errors_fatal
        ? {}
        : { unauthorized: unauthorized.map((stream) => stream.name) }),
      ...messages.answer,
    },
    after: () =>
      sendNewSubscriptionNotices(realm, user, {
        subscribed: result.subscribed,
        created,
        bots,
        directMessages: messages.sent,
        announce: params.announce,
      }),
  };
}

/** Zulip's remove_subscriptions_backend, inside the caller's transaction. */
async function removeSubscriptions(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  channels: string[],
  principals: SubscribeValues['principals'],
): Promise<z.infer<typeof removedAnswer>> {
  const { tx } = ctx;
  const perms = await loadPermissions(user);
  const targets = principals?.length
    ? await resolvePrincipals(tx, user, realm, principals)
    : [user];
  const names = [...new Set(channels.map((name) => name.trim()))];
  const found = await streamsByName(realm.id, names, tx);
  // A user's own bots count as the user (Zulip's user_directly_controls_user).
  const othersTargeted = targets.some(
    (target) => target.id !== user.id && !(target.isBot && target.botOwnerId === user.id),
  );
  if (othersTargeted) {
    const mine = await subscribedRecipients(tx, user.id, [...found.values()]);
    for (const stream of found.values()) {
      const subscribed = mine.has(stream.recipientId!);
      if (!canRemoveSubscribers(perms, stream, subscribed)) throw new InsufficientPermissionError();
    }
  }
  const unknown = names.filter((name) => !found.has(name));
  if (unknown.length > 0)
    throw new JsonableError(`Channel(s) (${unknown.join(', ')}) do not exist`);
  const result = await doRemoveSubscriptions(
    ctx,
    realm,
    targets.flatMap((target) => [...found.values()].map((stream) => ({ user: target, stream }))),
    user.id,
  );
  return {
    removed: result.removed.map((pair) => pair.stream.name),
    not_removed: result.notRemoved.map((pair) => pair.stream.name),
  };
}

function refuseGuests(user: User): void {
  if (isGuest(user)) throw new JsonableError('Not allowed for guest users');
}

defineRoute(subscriptionRoutes, '/users/me/subscriptions', {
  GET: userEndpoint(
    {
      params: { include_subscribers: includeSubscribersParam },
      response: z.object({ subscriptions: z.array(schema.subscription) }),
    },
    async ({ user, realm, params }) => ({
      subscriptions: await subscriptionsOf(user, realm, params.include_subscribers !== false),
    }),
  ),
  POST: userEndpoint(
    {
      params: { subscriptions: channelsToAdd, ...subscribeParams },
      response: subscribedAnswer,
    },
    async ({ user, realm, params }) => {
      checkColors(params.subscriptions, 'subscriptions');
      refuseGuests(user);
      const added = await runAction((ctx) =>
        addSubscriptions(ctx, user, realm, params.subscriptions, params),
      );
      await added.after();
      return added.answer;
    },
  ),
  // Zulip's update_subscriptions_backend: subscribing, then unsubscribing, in one transaction
  // (either both happen or neither), answered as both answer. The other parameters are
  // subscribing's; `principals` applies to both, as in Zulip, and guests are refused even a
  // removal alone (subscribing, which refuses them, runs first there).
  PATCH: userEndpoint(
    {
      params: {
        add: channelsToAdd.default([]),
        delete: channelsToRemove.default([]),
        ...subscribeParams,
      },
      response: subscribedAnswer.extend(removedAnswer.shape),
    },
    async ({ user, realm, params }) => {
      checkColors(params.add, 'add');
      if (params.add.length === 0 && params.delete.length === 0)
        throw new JsonableError('Nothing to do. Specify at least one of "add" or "delete".');
      refuseGuests(user);
      const { added, removed } = await runAction(async (ctx) => {
        const added = await addSubscriptions(ctx, user, realm, params.add, params);
        const removed = await removeSubscriptions(
          ctx,
          user,
          realm,
          params.delete,
          params.principals,
        );
        return { added, removed };
      });
      await added.after();
      return { ...added.answer, ...removed };
    },
  ),
  DELETE: userEndpoint(
    {
      params: { subscriptions: channelsToRemove, principals: principalsParam },
      response: removedAnswer,
    },
    async ({ user, realm, params }) =>
      runAction((ctx) =>
        removeSubscriptions(ctx, user, realm, params.subscriptions, params.principals),
      ),
  ),
});

const propertyChange = z.strictObject({
  stream_id: id,
  property: z.string(),
  value: z.union([z.boolean(), z.string()]),
});

// Declared before /users/:user_id/subscriptions/:stream_id, whose pattern it also matches.
defineRoute(subscriptionRoutes, '/users/me/subscriptions/properties', {
  POST: userEndpoint(
    {
      params: { subscription_data: p.json(z.array(propertyChange)) },
      response: schema.empty,
    },
    async ({ user, params }) => {
      // Zulip applies each change in its own transaction: a failing item keeps earlier ones.
      // Every item is validated before any is applied, as Zulip's request model does.
      const changes = params.subscription_data.map((change, index) => ({
        streamId: change.stream_id,
        checked: checkSubscriptionProperty(
          change.property,
          change.value,
          `subscription_data[${index}]`,
        ),
      }));
      for (const { streamId, checked } of changes)
        await changeOwnSubscription(user, streamId, checked);
      return {};
    },
  ),
});

const subscriptionPath = { user_id: p.string(), stream_id: p.int({ min: 1 }) };

defineRoute(subscriptionRoutes, '/users/:user_id/subscriptions/:stream_id', {
  GET: userEndpoint(
    { path: subscriptionPath, response: z.object({ is_subscribed: z.boolean() }) },
    async ({ user, realm, path }) => {
      const target = await userByPathSegment(user, realm, path.user_id);
      const perms = await loadPermissions(user);
      const { stream } = await accessStreamById(perms, path.stream_id, {
        requireContentAccess: false,
      });
      return { is_subscribed: (await subscriptionOf(target.id, stream)) !== null };
    },
  ),
  // Only the caller's own settings change: PATCH /users/me/subscriptions/{stream_id} (4.12).
  PATCH: userEndpoint(
    {
      path: subscriptionPath,
      params: { property: p.string(), value: p.string() },
      response: schema.empty,
    },
    async ({ user, path, params }) => {
      if (path.user_id !== 'me') throw new NotFoundError();
      // `value` is a JSON boolean for every property but color, which is a raw string.
      const value =
        params.value === 'true' ? true : params.value === 'false' ? false : params.value;
      const checked = checkSubscriptionProperty(params.property, value, 'value');
      await changeOwnSubscription(user, path.stream_id, checked);
      return {};
    },
  ),
});

// ---- Helpers ---------------------------------------------------------------------------------

/** One change to the caller's own subscription, in its own transaction. */
async function changeOwnSubscription(
  user: User,
  streamId: number,
  change: ReturnType<typeof checkSubscriptionProperty>,
): Promise<void> {
  await runAction(async (ctx) => {
    const perms = await loadPermissions(user);
    // Zulip's access_stream_by_id: a private channel one is not in is 'Invalid channel ID',
    // even to an administrator.
    const { stream, subscription } = await accessStreamById(perms, streamId, { db: ctx.tx });
    if (!subscription) throw new JsonableError(`Not subscribed to channel ID ${streamId}`);
    await doChangeSubscriptionProperty(
      ctx,
      user,
      stream,
      subscription,
      change.property,
      change.value,
    );
  });
}

function namesByUser(pairs: SubscriptionPair[]): Record<string, string[]> {
  const result: Record<string, string[]> = {};
  for (const pair of pairs) (result[String(pair.user.id)] ??= []).push(pair.stream.name);
  return result;
}

defineRoute(subscriptionRoutes, '/channels/create', {
  POST: userEndpoint(
    {
      params: {
        name: p.string(),
        description: p.string({ maxLength: MAX_DESCRIPTION_LENGTH }).default(''),
        subscribers: p.json(z.array(id).max(MAX_LIST)),
        ...channelCreationParams,
      },
      response: z.object({ id: schema.id }),
    },
    async ({ user, realm, params }) => {
      if (isGuest(user)) throw new JsonableError('Not allowed for guest users');
      const name = checkStreamName(params.name);
      const description = checkDescription(params.description);
      const settings = channelSettingsOf(params);
      const { stream, result, bots } = await runAction(async (ctx) => {
        const { tx } = ctx;
        const perms = await loadPermissions(user);
        settings.folderId = await checkedFolder(tx, realm.id, params.folder_id);
        if ((await streamsByName(realm.id, [name], tx)).size > 0)
          throw new ChannelExistsError(name);
        await checkChannelCreation(tx, perms, realm, settings);
        // Nothing created: a concurrent request made a channel of that name first.
        const [stream] = await doCreateStreams(
          ctx,
          realm,
          user.id,
          [{ name, description }],
          settings,
        );
        if (!stream) throw new ChannelExistsError(name);
        // Whoever creates a channel chooses its first subscribers, themselves included or not.
        const targets = params.subscribers.length
          ? await resolvePrincipals(tx, user, realm, params.subscribers)
          : [];
        const result = await doAddSubscriptions(
          ctx,
          realm,
          targets.map((target) => ({ user: target, stream })),
          user.id,
        );
        const bots = new Set(targets.filter((target) => target.isBot).map((target) => target.id));
        return { stream, result, bots };
      });
      await sendNewSubscriptionNotices(realm, user, {
        subscribed: result.subscribed,
        created: [stream],
        bots,
        directMessages: sendsSubscriptionMessages(
          params.send_new_subscription_messages,
          new Set(result.subscribed.map((pair) => pair.user.id)).size,
        ),
        announce: params.announce,
      });
      return { id: stream.id };
    },
  ),
});
