// POST /typing: typing notifications for a direct-message conversation or a channel topic.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { getPrisma } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import { checkCanPost } from '../actions/messages';
import { checkCanEditContent } from '../actions/message-edit';
import {
  checkDirectTyping,
  doSendChannelTyping,
  doSendDirectTyping,
  doSendEditTyping,
} from '../actions/typing';
import { accessMessage, InvalidMessageError } from '../lib/messages';
import { accessStreamById, loadPermissions } from '../lib/streams';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';

export const typingRoutes = Router();

const userId = z
  .number()
  .int()
  .min(1)
  .max(2 ** 31 - 1);

defineRoute(typingRoutes, '/typing', {
  POST: userEndpoint(
    {
      params: {
        op: p.enum(['start', 'stop']),
        // "private" was removed at feature level 215; Zulip answers "Invalid type" for it.
        type: p.enum(['direct', 'stream', 'channel']).default('direct'),
        to: p.json(z.array(userId).max(1000).nullable()).optional(),
        stream_id: p.json(userId.nullable()).optional(),
        topic: p.string({ maxLength: 1000 }).optional().alias('subject'),
      },
    },
    async ({ user, realm, params }) => {
      if (params.type === 'direct') {
        if (params.to === undefined || params.to === null)
          throw new JsonableError("Missing 'to' argument");
        const recipients = await checkDirectTyping(user, params.to);
        await doSendDirectTyping(realm, user, recipients, params.op);
        return {};
      }
      if (params.stream_id === undefined || params.stream_id === null)
        throw new JsonableError("Missing 'stream_id' argument");
      if (params.topic === undefined) throw new JsonableError('Missing topic');
      if (!user.sendStreamTypingNotifications)
        throw new JsonableError('User has disabled typing notifications for channel messages');
      const perms = await loadPermissions(user);
      const { stream } = await accessStreamById(perms, params.stream_id, { allowArchived: false });
      await checkCanPost(getPrisma(), user, stream);
      const trimmed = params.topic.trim();
      const topic = trimmed === EMPTY_TOPIC_DISPLAY_NAME || trimmed === '(no topic)' ? '' : trimmed;
      await doSendChannelTyping(realm, user, stream, topic, params.op);
      return {};
    },
  ),
});

defineRoute(typingRoutes, '/messages/:message_id/typing', {
  POST: userEndpoint(
    { path: { message_id: p.int({ min: 1 }) }, params: { op: p.enum(['start', 'stop']) } },
    async ({ user, realm, path, params }) => {
      const { message, stream } = await accessMessage(user, path.message_id);
      if (stream?.deactivated) throw new InvalidMessageError();
      // No grace period: typing comes before the edit.
      checkCanEditContent(realm, user, message, 0);
      if (stream ? !user.sendStreamTypingNotifications : !user.sendPrivateTypingNotifications)
        throw new JsonableError(
          stream
            ? 'User has disabled typing notifications for channel messages'
            : 'User has disabled typing notifications for direct messages',
        );
      await doSendEditTyping(user, message, stream, params.op);
      return {};
    },
  ),
});
