// Topic visibility: POST /user_topics (mute, unmute, follow, or back to the channel's default)
// and the legacy PATCH /users/me/subscriptions/muted_topics.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction, type Stream, type User } from '@parley/db';
import { IncompatibleParametersError, JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doSetUserTopicPolicy } from '../actions/user-topics';
import {
  accessStreamById,
  accessStreamByName,
  channelInRealm,
  loadPermissions,
} from '../lib/streams';
import { VisibilityPolicy, type VisibilityPolicyValue } from '../lib/user-topics';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';

export const userTopicRoutes = Router();

const MAX_TOPIC_LENGTH = 60;
const POLICIES: readonly number[] = Object.values(VisibilityPolicy);
const channelId = z
  .number()
  .int()
  .min(1)
  .max(2 ** 31 - 1);

/** Zulip's maybe_rename_general_chat_to_empty_topic. */
const normalizeTopic = (topic: string) => (topic === EMPTY_TOPIC_DISPLAY_NAME ? '' : topic);

async function setPolicy(user: User, stream: Stream, topic: string, policy: VisibilityPolicyValue) {
  await runAction((ctx) => doSetUserTopicPolicy(ctx, user, stream, topic, policy));
}

defineRoute(userTopicRoutes, '/user_topics', {
  POST: userEndpoint(
    {
      params: {
        stream_id: p.json(channelId),
        topic: p.string({ maxLength: MAX_TOPIC_LENGTH }),
        visibility_policy: p.json(z.number().int()),
      },
      response: schema.empty,
    },
    async ({ user, params }) => {
      if (!POLICIES.includes(params.visibility_policy))
        throw new JsonableError(
          'Invalid visibility_policy: Value error, Not in the list of possible values',
        );
      const policy = params.visibility_policy as VisibilityPolicyValue;
      let stream: Stream | null;
      if (policy === VisibilityPolicy.INHERIT) {
        stream = await channelInRealm(user.realmId, { id: params.stream_id });
        if (!stream) throw new JsonableError('Invalid channel ID');
      } else {
        const perms = await loadPermissions(user);
        stream = (await accessStreamById(perms, params.stream_id, { allowArchived: false })).stream;
      }
      await setPolicy(user, stream, normalizeTopic(params.topic), policy);
      return {};
    },
  ),
});

defineRoute(userTopicRoutes, '/users/me/subscriptions/muted_topics', {
  PATCH: userEndpoint(
    {
      params: {
        op: p.enum(['add', 'remove']),
        topic: p.string({ maxLength: MAX_TOPIC_LENGTH }),
        stream: p.string({ maxLength: 60 }).optional(),
        stream_id: p.json(channelId).optional(),
      },
      response: schema.empty,
    },
    async ({ user, params }) => {
      if (params.stream !== undefined && params.stream_id !== undefined)
        throw new IncompatibleParametersError(['stream_id', 'stream']);
      let where: { id: number } | { name: string };
      if (params.stream_id !== undefined) where = { id: params.stream_id };
      else if (params.stream !== undefined) where = { name: params.stream };
      else throw new JsonableError("Missing 'stream_id' argument");
      const topic = normalizeTopic(params.topic);
      if (params.op === 'add') {
        const perms = await loadPermissions(user);
        const { stream } =
          'id' in where
            ? await accessStreamById(perms, where.id, { allowArchived: false })
            : await accessStreamByName(perms, where.name);
        await setPolicy(user, stream, topic, VisibilityPolicy.MUTED);
      } else {
        const stream = await channelInRealm(user.realmId, where);
        if (!stream) throw new JsonableError('Topic is not muted');
        await setPolicy(user, stream, topic, VisibilityPolicy.INHERIT);
      }
      return {};
    },
  ),
});
