// POST /typing: typing notifications for a direct-message conversation or a channel topic.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { checkCanEditContent } from '../actions/message-edit';
import {
  checkChannelTyping,
  checkDirectTyping,
  doSendChannelTyping,
  doSendDirectTyping,
  doSendEditTyping,
} from '../actions/typing';
import { accessMessage, InvalidMessageError } from '../lib/messages';

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
      response: schema.empty,
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
      const { stream, topic } = await checkChannelTyping(user, params.stream_id, params.topic);
      await doSendChannelTyping(realm, user, stream, topic, params.op);
      return {};
    },
  ),
});

defineRoute(typingRoutes, '/messages/:message_id/typing', {
  POST: userEndpoint(
    {
      path: { message_id: p.int({ min: 1 }) },
      params: { op: p.enum(['start', 'stop']) },
      response: schema.empty,
    },
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
